// A real `graphsvc serve` for the tests: a fresh data dir, keys for a write and a read tenant of
// one namespace, port 0 (the kernel picks; read back from the server's log), stopped after.
// GRAPHSVC_PYTHON names the Python with graphsvc installed (default: `python` on PATH, which
// scripts/test.sh makes the checkout's .venv).

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const PYTHON = process.env.GRAPHSVC_PYTHON ?? "python";

/** This process's environment without any GRAPHSVC_ setting (the tests choose their own). */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("GRAPHSVC_") && value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface Server {
  url: string;
  base: string;
  writeKey: string;
  readKey: string;
  namespace: string;
  dataDir: string;
  stop(): Promise<void>;
}

export async function startServer(settings: Record<string, string> = {}): Promise<Server> {
  const dataDir = join(tempDir("graphsvc-ts-"), "data");
  const namespace = `ts${randomBytes(4).toString("hex")}`;
  const writeKey = randomBytes(24).toString("base64url");
  const readKey = randomBytes(24).toString("base64url");
  const env = cleanEnv({
    GRAPHSVC_FSYNC: "false",
    GRAPHSVC_API_KEYS: `${writeKey}=${namespace}:write,${readKey}=${namespace}:read`,
    ...settings,
  });
  const args = ["-m", "graphsvc.api.serve", "--port", "0", "--data-dir", dataDir, "--create"];
  const child: ChildProcess = spawn(PYTHON, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`graphsvc did not start:\n${log}`)), 60_000);
    const read = (chunk: Buffer) => {
      log += chunk.toString();
      const found = /Uvicorn running on (http:\/\/[^\s"]+)/.exec(log);
      if (found?.[1]) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.on("exit", (code) => reject(new Error(`graphsvc exited with ${code}:\n${log}`)));
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(join(dataDir, ".."), { recursive: true, force: true });
  };
  return { url: `${base}/graphql`, base, writeKey, readKey, namespace, dataDir, stop };
}

/** Run a Python program with `input` on its stdin; its stdout parsed as JSON. */
export function python<T>(args: string[], input: unknown, env = cleanEnv()): T {
  const done = spawnSync(PYTHON, args, {
    input: JSON.stringify(input),
    env,
    encoding: "utf-8",
    timeout: 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (done.status !== 0) {
    throw new Error(`${PYTHON} ${args.join(" ")} exited with ${done.status}:\n${done.stderr}`);
  }
  return JSON.parse(done.stdout) as T;
}
