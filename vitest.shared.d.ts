import type { UserConfig } from 'vitest/config';
export declare function sharedVitestConfig(test?: UserConfig['test']): UserConfig;
