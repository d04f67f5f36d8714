// Entry of a CpuPool worker thread (cpu-pool.ts) when the sources run as TypeScript (`node --import tsx`, the
// `ai4rag` bin, vitest): a worker thread does not inherit a loader registered through the API, so it registers tsx
// itself, then loads the tasks. Built JavaScript loads cpu-tasks.js directly and never comes here.
import { register } from 'tsx/esm/api';

register();
const { runCpuTask } = await import('./cpu-tasks.ts');

export default runCpuTask;
