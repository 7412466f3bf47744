import { fileURLToPath } from 'node:url';

export type { EmbedTaskRequest } from './tasks/embed-task.js';

/** The compiled embed task, for a piscina pool; resolved through `../dist/` so it works from src and dist. */
export const EMBED_TASK = fileURLToPath(new URL('../dist/tasks/embed-task.js', import.meta.url));
