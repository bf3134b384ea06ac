'use strict';
// The LSP mode (setting `harnessSidecar.mode: "lsp"`): VS Code's own language client runs
// `harness-sidecar --lsp --stdio`. Live diagnostics and hovers while you write SKILL.md files,
// templates, AGENTS.md and extensions come from it; the extension's commands send the same
// custom requests (thread/start, skills/activate, …) through it. extension.js uses it through
// the same small connection interface as the JSONL client:
//   request(method, params, token) · onRequest(method, handler) · onNotification(method, handler)
//   · on('exit'|'log', …) · stop()
// vscode-languageclient is loaded only in this mode.

const { EventEmitter } = require('events');
const { SidecarError } = require('./client');
const { UI_CAPABILITIES } = require('./ui');

const DOCUMENT_SELECTOR = [
  { scheme: 'file', pattern: '**/skills/*/SKILL.md' },
  { scheme: 'file', pattern: '**/templates/*.md' },
  { scheme: 'file', pattern: '**/AGENTS.md' },
  { scheme: 'file', pattern: '**/extensions/**/*.py' },
];

function serverOptions(command) {
  const { TransportKind } = require('vscode-languageclient/node');
  const [file, ...args] = command;
  // TransportKind.stdio makes the client append `--stdio`, which the sidecar accepts.
  return { command: file, args: [...args, '--lsp'], transport: TransportKind.stdio };
}

function clientOptions({ roots, trustedExtensions, output }) {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    // capabilities.ui: what the extension answers when a trusted extension asks the user (ui/*)
    initializationOptions: { roots, trustedExtensions, capabilities: { ui: UI_CAPABILITIES } },
    outputChannel: output,
  };
}

class LspConnection extends EventEmitter {
  /** options: command, roots, trustedExtensions, output (a LogOutputChannel) */
  constructor(options) {
    super();
    const { LanguageClient, State } = require('vscode-languageclient/node');
    this.client = new LanguageClient('harnessSidecar', 'Harness Sidecar', serverOptions(options.command), {
      ...clientOptions(options),
      errorHandler: {
        error: () => ({ action: 1 /* Continue */ }),
        closed: () => {
          this.emit('exit', null, null, this.stopping);
          return { action: 1 /* DoNotRestart */, handled: true };
        },
      },
      initializationFailedHandler: (error) => {
        this.emit('log', `initialize failed: ${error && error.message}`);
        return false;
      },
    });
    this.State = State;
    this.stopping = false;
  }

  async start() {
    await this.client.start();
    return this.client.initializeResult;
  }

  /**
   * @template {keyof import('./client').ClientRequests} M
   * @param {M} method
   * @param {import('./client').ClientRequests[M]['params']} [params]
   * @param {import('vscode').CancellationToken} [token]
   * @returns {Promise<import('./client').ClientRequests[M]['result']>}
   */
  request(method, params, token) {
    // Without a token, none is passed: vscode-jsonrpc would send [params, undefined] as the params.
    const sent = token ? this.client.sendRequest(method, params, token) : this.client.sendRequest(method, params);
    return sent.catch((err) => {
      throw new SidecarError(`${method}: ${err && err.message}`, err && err.code, err && err.data);
    });
  }

  /**
   * @template {keyof import('./client').ServerRequests} M
   * @param {M} method
   * @param {import('./client').RequestHandler<M>} handler
   */
  onRequest(method, handler) {
    this.client.onRequest(method, handler);
  }

  /**
   * @template {keyof import('./client').ServerNotifications} M
   * @param {M} method
   * @param {(params: import('./client').ServerNotifications[M]) => void} handler
   */
  onNotification(method, handler) {
    this.client.onNotification(method, handler);
  }

  async stop() {
    this.stopping = true;
    if (this.client.state === this.State.Running || this.client.state === this.State.Starting) await this.client.stop(5000);
    return 0;
  }
}

module.exports = { LspConnection, serverOptions, clientOptions, DOCUMENT_SELECTOR };
