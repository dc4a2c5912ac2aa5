export * from './naming.js';
export * from './types.js';
export * from './field-groups.js';
export * from './field-catalog.js';
export * from './report-definitions.js';
export * from './on-demand-sections.js';
