// Types of bin/cli-bundle.mjs (plain JavaScript: it runs before any loader is registered).
export declare const ROOT: string;
export declare const BUNDLE_DIR: string;
export declare const MANIFEST: string;
export declare function bundleStale(
  env?: Record<string, string | undefined>,
  dir?: string,
  root?: string,
): string | undefined;
