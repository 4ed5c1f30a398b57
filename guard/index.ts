/**
 * The pure loop guard: fingerprints, the LoopGuard state machine, StopReports and the
 * offline replay. No Node built-ins, no Temporal: it runs anywhere.
 */
export * from './constants';
export * from './reasons';
export * from './schemas';
export * from './canonical';
export * from './fingerprint';
export * from './near';
export * from './loop-guard';
export { workspaceOf } from './reapplied';
export * from './profiles';
export * from './failure-memory';
export * from './tool-error';
export * from './report';
export * from './outcome';
export * from './replay';
export * from './script-calls';
export * from './args-diff';
