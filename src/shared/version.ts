/** The one service version string, reported by every health endpoint and the beacon. */
export const SERVICE_VERSION = '0.3.0';
