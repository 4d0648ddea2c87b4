export function registerBundlePublish(_cli: unknown) {}
