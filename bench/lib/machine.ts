/** What the benchmark ran on (and the source revision, read-only). */
import { execFileSync, spawnSync } from 'node:child_process';
import { arch, cpus, freemem, loadavg, platform, release, totalmem } from 'node:os';
import { availableParallelism } from 'node:os';

export interface MachineInfo {
  readonly cpu_model: string;
  /** Logical CPUs the process may use. */
  readonly cores: number;
  readonly memory_gib: number;
  readonly free_memory_gib: number;
  readonly node: string;
  /** `uname -m`. */
  readonly machine: string;
  readonly os: string;
  readonly java: string;
  /** 1-minute load average when the run started and ended (other work on the machine skews latency). */
  readonly load_average_start: number;
  load_average_end?: number;
  readonly git_commit?: string;
  readonly git_dirty?: boolean;
}

function sh(cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 }).trim();
  } catch (err) {
    const e = err as { stderr?: string };
    return typeof e.stderr === 'string' && e.stderr.trim() !== '' ? e.stderr.trim() : undefined;
  }
}

export function machineInfo(): MachineInfo {
  const commit = sh('git', ['rev-parse', '--short', 'HEAD']);
  const dirty = sh('git', ['status', '--porcelain', '--untracked-files=no']);
  const java = spawnSync('java', ['-version'], { encoding: 'utf8', timeout: 10_000 });
  const javaVersion = `${java.stderr ?? ''}${java.stdout ?? ''}`.trim().split('\n')[0] || 'java: unknown';
  return {
    cpu_model: cpus()[0]?.model?.trim() ?? 'unknown',
    cores: availableParallelism(),
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    free_memory_gib: Math.round((freemem() / 2 ** 30) * 10) / 10,
    node: process.version,
    machine: sh('uname', ['-m']) ?? arch(),
    os: `${platform()} ${release()}`,
    java: javaVersion,
    load_average_start: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    ...(commit !== undefined && /^[0-9a-f]+$/.test(commit) ? { git_commit: commit, git_dirty: (dirty ?? '') !== '' } : {}),
  };
}

export function currentLoad(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}
