'use strict';
// A JSON-RPC client for harness-sidecar over JSONL on a child process's stdin/stdout.
// No `vscode` import: the extension wires it to VS Code, the tests drive it from node.

const { spawn } = require('child_process');
const { EventEmitter } = require('events');

// Types (checked by `npm run typecheck`): every request, answer and notification is the
// protocol's, from types/protocol.d.ts (generated from protocol.schema.json).
/** @typedef {import('./types/protocol').ClientRequests} ClientRequests */
/** @typedef {import('./types/protocol').ServerRequests} ServerRequests */
/** @typedef {import('./types/protocol').ServerNotifications} ServerNotifications */
/** @typedef {import('./types/protocol').ClientCapabilities} ClientCapabilities */
/**
 * @typedef {{isCancellationRequested: boolean,
 *   onCancellationRequested: (listener: () => void) => {dispose(): void}}} Token
 */
/**
 * @template {keyof ServerRequests} M
 * @typedef {(params: ServerRequests[M]['params'], token: Token) =>
 *   ServerRequests[M]['result'] | Promise<ServerRequests[M]['result']>} RequestHandler
 */
/**
 * What extension.js uses of a connection: SidecarClient (JSONL) and LspConnection (LSP) both.
 * @typedef {object} Connection
 * @property {() => Promise<any>} start
 * @property {() => Promise<any>} stop
 * @property {<M extends keyof ClientRequests>(method: M, params?: ClientRequests[M]['params'],
 *   options?: any) => Promise<ClientRequests[M]['result']>} request
 * @property {<M extends keyof ServerRequests>(method: M, handler: RequestHandler<M>) => void} onRequest
 * @property {<M extends keyof ServerNotifications>(method: M,
 *   handler: (params: ServerNotifications[M]) => void) => void} onNotification
 * @property {(event: string, listener: (...args: any[]) => void) => any} on
 */

class SidecarError extends Error {
  /**
   * @param {string} message
   * @param {number} code
   * @param {{kind?: string, [key: string]: any}} [data]
   */
  constructor(message, code, data) {
    super(message);
    this.name = 'SidecarError';
    this.code = code;
    this.data = data;
    this.kind = data && data.kind;
  }
}

/** A cancellation token as VS Code's: `{isCancellationRequested, onCancellationRequested(listener)}`. */
class CancellationSource {
  constructor() {
    const listeners = new Set();
    this.listeners = listeners;
    /** @type {Token} */
    this.token = {
      isCancellationRequested: false,
      onCancellationRequested: (listener) => {
        listeners.add(listener);
        return { dispose: () => listeners.delete(listener) };
      },
    };
  }

  cancel() {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    for (const listener of [...this.listeners]) listener();
    this.listeners.clear();
  }
}

/**
 * Events: 'log' (a stderr line), 'notification' (method, params), 'exit' (code, signal, expected),
 * 'restart' (attempt), 'started'.
 */
class SidecarClient extends EventEmitter {
  /**
   * @param {object} options
   * @param {string[]} options.command  argv of the sidecar, e.g. ['harness-sidecar']
   * @param {NodeJS.ProcessEnv} [options.env]  environment of the child (default: this process's)
   * @param {string} [options.cwd]
   * @param {number} [options.timeoutMs]  default request timeout (30 s)
   * @param {number} [options.maxRestarts] restarts after a crash (default 0: report only)
   * @param {ClientCapabilities} [options.capabilities] `initialize.capabilities` (e.g. `{ui: {confirm: true}}`)
   */
  constructor(options) {
    super();
    this.command = options.command;
    this.env = options.env || process.env;
    this.cwd = options.cwd;
    this.timeoutMs = options.timeoutMs || 30000;
    this.maxRestarts = options.maxRestarts || 0;
    this.capabilities = options.capabilities || {};
    this.restarts = 0;
    /** @type {Map<string, (params: any, token: Token) => any>} */
    this.requestHandlers = new Map();
    /** @type {Map<string, (params: any) => void>} */
    this.notificationHandlers = new Map();
    /** @type {Map<number, {method: string, resolve: (value: any) => void, reject: (err: any) => void, timer: NodeJS.Timeout}>} */
    this.pending = new Map();
    /** @type {Map<number | string, CancellationSource>} the sidecar's requests being answered */
    this.answering = new Map();
    this.nextId = 1;
    /** @type {import('child_process').ChildProcessWithoutNullStreams | null} */
    this.proc = null;
    this.stopping = false;
  }

  /**
   * Spawn the sidecar and send `initialize`; resolves with its result.
   * @returns {Promise<ClientRequests['initialize']['result']>}
   */
  async start() {
    this.stopping = false;
    const [file, ...args] = this.command;
    const proc = spawn(file, args, { cwd: this.cwd, env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    let buffered = Buffer.alloc(0);
    proc.stdout.on('data', (chunk) => {
      // Split on the byte \n only, then decode each whole line: a multi-byte character cut
      // between two chunks is never decoded in halves.
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      let newline;
      while ((newline = buffered.indexOf(0x0a)) >= 0) {
        const line = buffered.subarray(0, newline).toString('utf8');
        buffered = buffered.subarray(newline + 1);
        if (line.trim()) this._receive(line);
      }
    });
    let errBuffered = '';
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (text) => {
      errBuffered += text;
      const lines = errBuffered.split('\n');
      errBuffered = lines.pop() || '';
      for (const line of lines) this.emit('log', line);
    });
    proc.stdin.on('error', () => {}); // EPIPE after a crash: reported through 'exit'
    const spawned = new Promise((resolve, reject) => {
      proc.once('spawn', resolve);
      proc.once('error', (err) => reject(new SidecarError(`cannot start ${file}: ${err.message}`, -1, { kind: 'spawn_failed' })));
    });
    proc.once('exit', (code, signal) => this._exited(proc, code, signal));
    await spawned;
    const result = await this.request('initialize', {
      clientInfo: { name: 'harness-sidecar-vscode' }, protocolVersion: '4', capabilities: this.capabilities,
    });
    this.emit('started', result);
    return result;
  }

  /**
   * Answer the sidecar's reverse request `method` (e.g. item/tool/call, ui/confirm) with
   * `handler(params, token)`. `token` is cancelled when the sidecar sends `$/cancelRequest` for it
   * (it gave up waiting); the request is then answered -32800 whatever the handler returns.
   */
  /**
   * @template {keyof ServerRequests} M
   * @param {M} method
   * @param {RequestHandler<M>} handler
   */
  onRequest(method, handler) {
    this.requestHandlers.set(method, handler);
  }

  /**
   * Handle the sidecar's notification `method` (also emitted as 'notification').
   * @template {keyof ServerNotifications} M
   * @param {M} method
   * @param {(params: ServerNotifications[M]) => void} handler
   */
  onNotification(method, handler) {
    this.notificationHandlers.set(method, handler);
  }

  /**
   * Send a request. `token` (a CancellationToken: {isCancellationRequested, onCancellationRequested})
   * sends `$/cancelRequest`; the sidecar then answers -32800, which rejects with kind 'cancelled'.
   * The third argument is `{timeoutMs, token}`, or the token itself (as vscode-languageclient takes it).
   * @template {keyof ClientRequests} M
   * @param {M} method
   * @param {ClientRequests[M]['params']} [params]
   * @param {{timeoutMs?: number, token?: Token} | Token} [options]
   * @returns {Promise<ClientRequests[M]['result']>}
   */
  request(method, params, options = {}) {
    /** @type {{timeoutMs?: number, token?: Token}} */
    const { timeoutMs, token } = options && 'onCancellationRequested' in options ? { token: options } : (options || {});
    if (!this._runningProcess()) {
      return Promise.reject(new SidecarError('the sidecar is not running', -1, { kind: 'not_running' }));
    }
    const id = this.nextId++;
    const timeout = timeoutMs || this.timeoutMs;
    return new Promise((resolve, reject) => {
      /** @type {{dispose(): void} | null} */
      let cancellation = null;
      // Every way a request ends (answer, timeout, exit) lets go of the token's listener.
      const settle = (/** @type {(value: any) => void} */ fn) => (/** @type {any} */ value) => {
        if (cancellation) cancellation.dispose();
        fn(value);
      };
      const fail = settle(reject);
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.notify('$/cancelRequest', { id });
        fail(new SidecarError(`${method} timed out after ${timeout} ms`, -1, { kind: 'timeout' }));
      }, timeout);
      this.pending.set(id, { method, resolve: settle(resolve), reject: fail, timer });
      this._send({ jsonrpc: '2.0', id, method, params: params === undefined ? {} : params });
      if (token) {
        const cancel = () => { if (this.pending.has(id)) this.notify('$/cancelRequest', { id }); };
        if (token.isCancellationRequested) cancel();
        else cancellation = token.onCancellationRequested(cancel);
      }
    });
  }

  /**
   * @template {keyof import('./types/protocol').ClientNotifications} M
   * @param {M} method
   * @param {import('./types/protocol').ClientNotifications[M]} [params]
   */
  notify(method, params) {
    this._send({ jsonrpc: '2.0', method, params });
  }

  /** `shutdown`, then `exit`; resolves with the exit code. */
  async stop() {
    const proc = this._runningProcess();
    if (!proc) return this.proc ? this.proc.exitCode : 0;
    this.stopping = true;
    /** @type {Promise<number | null>} */
    const exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    try {
      await this.request('shutdown', undefined, { timeoutMs: 5000 });
      this.notify('exit');
    } catch (err) {
      proc.kill();
    }
    const killer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    const code = await exited;
    clearTimeout(killer);
    return code;
  }

  _send(message) {
    if (this.proc && this.proc.stdin.writable) this.proc.stdin.write(JSON.stringify(message) + '\n');
  }

  /** The sidecar's process, unless there is none or it has ended (with a status or a signal): then null. */
  _runningProcess() {
    const proc = this.proc;
    return proc && proc.exitCode === null && proc.signalCode === null ? proc : null;
  }

  _receive(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch (err) {
      this.emit('log', `unparsable line from the sidecar: ${line.slice(0, 200)}`);
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      this._answer(message);
    } else if (message.method !== undefined) {
      const answering = message.method === '$/cancelRequest' && message.params && this.answering.get(message.params.id);
      if (answering) answering.cancel();
      const handler = this.notificationHandlers.get(message.method);
      if (handler) {
        try { handler(message.params); } catch (err) { this.emit('log', `${message.method} handler failed: ${err.message}`); }
      }
      this.emit('notification', message.method, message.params);
    } else {
      const waiting = this.pending.get(message.id);
      if (!waiting) return; // a response to a request that timed out
      this.pending.delete(message.id);
      clearTimeout(waiting.timer);
      if (message.error) {
        const { message: text, code, data } = message.error;
        waiting.reject(new SidecarError(`${waiting.method}: ${text}`, code, data));
      } else {
        waiting.resolve(message.result);
      }
    }
  }

  async _answer(message) {
    const handler = this.requestHandlers.get(message.method);
    if (!handler) {
      this._send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `no handler for ${message.method}` } });
      return;
    }
    const source = new CancellationSource();
    this.answering.set(message.id, source);
    try {
      const result = await handler(message.params, source.token);
      if (source.token.isCancellationRequested) {
        this._send({ jsonrpc: '2.0', id: message.id, error: { code: -32800, message: `${message.method} was cancelled` } });
      } else {
        this._send({ jsonrpc: '2.0', id: message.id, result });
      }
    } catch (err) {
      this._send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: String(err && err.message || err) } });
    } finally {
      this.answering.delete(message.id);
    }
  }

  _exited(proc, code, signal) {
    if (proc !== this.proc) return;
    const expected = this.stopping;
    const reason = signal ? `signal ${signal}` : `status ${code}`;
    for (const source of this.answering.values()) source.cancel(); // close what still asks the user
    this.answering.clear();
    for (const [id, waiting] of this.pending) {
      clearTimeout(waiting.timer);
      waiting.reject(new SidecarError(`the sidecar exited (${reason}) before answering ${waiting.method}`, -1,
        { kind: 'sidecar_exited' }));
      this.pending.delete(id);
    }
    this.emit('exit', code, signal, expected);
    if (!expected && this.restarts < this.maxRestarts) {
      this.restarts += 1;
      const attempt = this.restarts;
      setTimeout(() => {
        this.emit('restart', attempt);
        this.start().catch((err) => this.emit('log', `restart ${attempt} failed: ${err.message}`));
      }, 200 * attempt);
    }
  }
}

module.exports = { SidecarClient, SidecarError, CancellationSource };
