import { CairnError } from '@cairn/core';

/**
 * The namespaces one caller may read and write: exact names, `prefix/*` patterns, or `*` for all.
 * Every service operation checks its namespaces here first, so a forbidden request does no work.
 */
export class NamespaceAccess {
  private constructor(
    private readonly exact: ReadonlySet<string>,
    private readonly prefixes: readonly string[],
    readonly all: boolean,
  ) {}

  static everything(): NamespaceAccess {
    return new NamespaceAccess(new Set(), [], true);
  }

  static of(patterns: readonly string[]): NamespaceAccess {
    const exact = new Set<string>();
    const prefixes: string[] = [];
    let all = false;
    for (const p of patterns) {
      if (p === '*') all = true;
      else if (p.endsWith('*')) prefixes.push(p.slice(0, -1));
      else exact.add(p);
    }
    return new NamespaceAccess(exact, prefixes, all);
  }

  allows(namespace: string): boolean {
    return this.all || this.exact.has(namespace) || this.prefixes.some((p) => namespace.startsWith(p));
  }

  /** Throws FORBIDDEN_NAMESPACE naming the field; the message never says whether the namespace exists. */
  assert(namespace: string, field = 'namespace'): void {
    if (!this.allows(namespace))
      throw new CairnError('FORBIDDEN_NAMESPACE', `this key may not use namespace "${namespace}"`, { field });
  }

  describe(): string[] {
    return this.all ? ['*'] : [...this.exact, ...this.prefixes.map((p) => `${p}*`)];
  }
}
