// Starts `pagoda serve` on a free port and waits until it is ready. Env: PAGODA_BINARY, PAGODA_MODEL_PATH.
import { spawn } from 'node:child_process';

// prefix: a command that runs the server, e.g. ['prlimit', '--fsize=3072', '--'].
export async function startServer(extraArgs = [], { prefix = [] } = {}) {
  // A pool size given in blocks replaces the default one given in memory.
  const pool = extraArgs.includes('--num-blocks') ? [] : ['--kv-cache-mem', '64MiB'];
  const args = ['serve', process.env.PAGODA_MODEL_PATH, '--port', '0', '-t', '2', ...pool, ...extraArgs];
  const command = [...prefix, process.env.PAGODA_BINARY, ...args];
  const proc = spawn(command[0], command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 20000);
    proc.stderr.on('data', (d) => {
      log += d.toString();
      const m = /serving '.*' on (http:\/\/[0-9.]+:\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', () => { clearTimeout(timer); reject(new Error(`server exited:\n${log}`)); });
  });
  return { proc, url, exited, log: () => log };
}
