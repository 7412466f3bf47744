/**
 * The repository a remote URL names, without what varies between clones of it: scheme, user,
 * credentials, port, a trailing `.git` or `/`. `https://u:tok@GitHub.com/acme/api.git`,
 * `git@github.com:acme/api` and `ssh://git@github.com:22/acme/api.git` all give `github.com/acme/api`.
 * A local path remote gives the path without its leading slashes; a relative one gives null, since it
 * means a different repository from each clone's folder.
 */
export function normalizeRemoteUrl(url: string): string | null {
  const s = url.trim();
  if (!s) return null;
  let host = '';
  let path: string;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(s);
  if (scheme) {
    const rest = s.slice(scheme[0].length).replace(/[?#].*$/, '');
    const slash = rest.indexOf('/');
    const authority = slash < 0 ? rest : rest.slice(0, slash);
    path = slash < 0 ? '' : rest.slice(slash + 1);
    // user[:password]@host[:port]: credentials must never end up in a namespace (or a log line).
    host = authority
      .slice(authority.lastIndexOf('@') + 1)
      .replace(/:\d*$/, '')
      .toLowerCase();
  } else {
    // scp-like `[user@]host:path`; a Windows drive letter (`C:\repos\api`) is a local path, not a host.
    const scp = /^(?:[^@/]+@)?([^:/\\]+):(.*)$/.exec(s);
    if (scp && !/^[A-Za-z]:[\\/]/.test(s)) {
      host = scp[1]!.toLowerCase();
      path = scp[2]!;
    } else if (/^(\/|[A-Za-z]:[\\/])/.test(s)) path = s;
    else return null;
  }
  path = path
    .replace(/\\/g, '/')
    .replace(/^\/+|\/+$/g, '')
    .replace(/\.git$/i, '')
    .replace(/\/+$/, '');
  const joined = host && path ? `${host}/${path}` : host || path;
  return joined || null;
}
