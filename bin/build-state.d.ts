/** See build-state.js. */
export function bundleIsCurrent(rootUrl: URL | string, env?: NodeJS.ProcessEnv): boolean;
