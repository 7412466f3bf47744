import { CairnError, NamespaceSchema } from '@cairn/core';
import { folderNamespace, gitNamespace } from '@cairn/mcp/namespaces';

/**
 * The namespace of the project in `cwd`, as every face that works for a coding agent derives it (`cairn
 * mcp`, the Claude Code hooks): `--namespace` when given, else the git repository's (`gitNamespace`), else
 * the folder's, under `prefix` when one is set. They must agree, or what one stores the other never finds.
 * `note` is set when the name came from a folder outside any git repository.
 */
export function projectNamespace(
  flag: string | undefined,
  prefix: string | undefined,
  cwd: string,
): { namespace: string; note?: string } {
  const valid = (ns: string, field: string) => {
    const parsed = NamespaceSchema.safeParse(ns);
    if (!parsed.success)
      throw new CairnError('INVALID_INPUT', `${field}: ${parsed.error.issues[0]!.message} (${ns})`, {
        field,
      });
    return parsed.data;
  };
  if (flag !== undefined) return { namespace: valid(flag, '--namespace') };
  const under = (derived: string) =>
    prefix ? valid(`${prefix.replace(/\/*$/, '')}/${derived}`, '--namespace-prefix') : derived;
  const git = gitNamespace(cwd);
  if (git !== null) return { namespace: under(git) };
  const namespace = under(folderNamespace(cwd));
  return {
    namespace,
    note: `Memories go to namespace ${namespace}, derived from this folder (${cwd}), which is not in a git repository; start cairn mcp with --namespace to choose one.`,
  };
}
