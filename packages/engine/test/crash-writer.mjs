// Child process for the kill -9 durability test: ingests batches forever, acknowledging each batch on
// stdout only after engine.ingest returned. Uses the compiled engine (run `pnpm build` first).
import { CairnEngine } from '../dist/index.js';

const [dataDir, exactThreshold] = process.argv.slice(2);
const engine = await CairnEngine.open({
  dataDir,
  exactThreshold: Number(exactThreshold),
  persistIntervalMs: 20,
});
let batch = 0;
const tick = () => {
  const items = Array.from({ length: 200 }, (_, i) => ({
    namespace: 'crash',
    id: `b${batch}-${i}`,
    text: `memory token${batch}x${i} written in batch ${batch}`,
    // Every fourth memory has a named field: its route vector is derived state too.
    ...(i % 4 === 0 ? { fields: { facts: `field${batch}y${i} noted in batch ${batch}` } } : {}),
  }));
  engine.ingest(items);
  process.stdout.write(`ack ${batch}\n`);
  batch++;
  setTimeout(tick, 5);
};
tick();
