export function registerBundleCreate(_cli: unknown) {}
