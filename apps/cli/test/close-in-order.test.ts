import { describe, expect, it } from 'vitest';
import { closeInOrder } from '../src/close-in-order.js';

describe('closeInOrder', () => {
  it('runs every step in order though one fails, then throws the first failure', async () => {
    const ran: string[] = [];
    const failure = new Error('engine close failed: disk full');
    await expect(
      closeInOrder([
        () => ran.push('producer'),
        async () => {
          ran.push('engine');
          throw failure;
        },
        async () => {
          ran.push('tokenizer');
          throw new Error('second failure');
        },
        () => ran.push('disconnect'),
      ]),
    ).rejects.toBe(failure);
    expect(ran).toEqual(['producer', 'engine', 'tokenizer', 'disconnect']);
  });

  it('resolves once every step has, each awaited before the next starts', async () => {
    const ran: string[] = [];
    await closeInOrder([
      async () => {
        await new Promise((r) => setTimeout(r, 20));
        ran.push('slow');
      },
      () => ran.push('next'),
    ]);
    expect(ran).toEqual(['slow', 'next']);
  });
});
