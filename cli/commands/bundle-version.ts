export function registerBundleVersion(_cli: unknown) {}
