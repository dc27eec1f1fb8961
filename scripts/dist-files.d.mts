export declare const ROOT: string
export declare const DIST: string
export declare function sourceFiles(): string[]
export declare function sourceStamp(): string
export declare function readStamp(dist?: string): string | undefined
export declare function writeStamp(stamp: string, dist?: string): void
export declare function copyRuntimeFiles(dist?: string): void
export declare function compiled(rel: string): boolean
export declare function compileOptions(outdir: string): import('esbuild').BuildOptions & { write: false }
export declare function writeCompiled(outputFiles: Array<{ path: string; text: string }>): void
