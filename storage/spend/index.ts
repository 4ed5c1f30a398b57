/** The tenant spend limit: limits, the store and signed raises. */
export * from './errors';
export * from './limits';
export * from './spend-store';
export * from './verify';
export * from './served-usage';
