'use strict';
// The editor's side of `ctx.ui` (protocol.md § Extension API, `ctx.ui`): what a trusted extension
// asks the user through the sidecar, shown with VS Code's own widgets.
//
//   ui/confirm → a modal warning with Allow / Deny naming the extension, the tool and its arguments
//   ui/select  → a QuickPick (labels and descriptions)       ui/input → an InputBox (placeholder)
//   ui/openUrl → env.openExternal (a remote MCP server's sign-in page; not opened: a message with the URL)
//   ui/notify  → an information / warning / error message    ui/status → a status-bar item per
//                                                             (extension, key); `text: null` removes it
//
// Whatever the user does not answer is "no": a dismissed dialog answers `confirmed: false` or
// `value: null`. When the sidecar stops waiting (`$/cancelRequest`: its uiTimeoutMs ran out, or the
// tool call was cancelled) the QuickPick or InputBox is closed; a modal message cannot be closed by
// an extension in VS Code, so it stays until the user dismisses it and that answer is dropped.

/** What this client answers: sent as `initialize.capabilities.ui` (JSONL) or
 * `initializationOptions.capabilities.ui` (LSP). */
const UI_CAPABILITIES = Object.freeze({ confirm: true, select: true, input: true, notify: true, status: true,
  openUrl: true });

const ALLOW = 'Allow';
const DENY = 'Deny';

/** @typedef {import('./types/protocol').UiConfirmParams} UiConfirmParams */
/** @typedef {import('./types/protocol').UiSelectParams} UiSelectParams */
/** @typedef {import('./types/protocol').UiInputParams} UiInputParams */
/** @typedef {import('./types/protocol').UiNotifyParams} UiNotifyParams */
/** @typedef {import('./types/protocol').UiStatusParams} UiStatusParams */
/** @typedef {import('./types/protocol').UiConfirmResult} UiConfirmResult */
/** @typedef {import('./types/protocol').UiValueResult} UiValueResult */
/** @typedef {import('./types/protocol').UiOpenUrlParams} UiOpenUrlParams */
/** @typedef {import('./types/protocol').UiOpenUrlResult} UiOpenUrlResult */
/**
 * @typedef {{isCancellationRequested: boolean,
 *   onCancellationRequested: (listener: () => void) => {dispose(): void}}} Token
 */

/** The modal's detail: the question, then who asks about which call. */
function confirmDetail(/** @type {UiConfirmParams} */ params) {
  const lines = [params.message, ''];
  lines.push(`Extension: ${params.extensionId}`);
  if (params.tool) lines.push(`Tool: ${params.tool}${params.callId ? ` (call ${params.callId})` : ''}`);
  if (params.arguments) lines.push(`Arguments: ${JSON.stringify(params.arguments, null, 2)}`);
  return lines.join('\n');
}

/** A promise that resolves with `value` when `token` is cancelled (never without a token). */
function whenCancelled(/** @type {Token | undefined} */ token, /** @type {any} */ value) {
  return new Promise((resolve) => {
    if (!token) return;
    if (token.isCancellationRequested) resolve(value);
    else token.onCancellationRequested(() => resolve(value));
  });
}

class EditorUi {
  /**
   * @param {any} vscode  the `vscode` module
   * @param {{info(message: string): void}} output  the log channel
   */
  constructor(vscode, output) {
    this.vscode = vscode;
    this.output = output;
    /** @type {Map<string, any>} status-bar items by (extension, key) */
    this.items = new Map();
  }

  /**
   * @param {UiConfirmParams} params
   * @param {Token} [token]
   * @returns {Promise<UiConfirmResult>}
   */
  async confirm(params, token) {
    const shown = this.vscode.window.showWarningMessage(params.title, { modal: true, detail: confirmDetail(params) },
      ALLOW, DENY);
    const answer = await Promise.race([shown, whenCancelled(token, undefined)]);
    this.output.info(`ui/confirm from ${params.extensionId}: ${answer === ALLOW ? 'allowed' : 'not allowed'}`);
    return { confirmed: answer === ALLOW };
  }

  /**
   * @param {UiSelectParams} params
   * @param {Token} [token]
   * @returns {Promise<UiValueResult>}
   */
  select(params, token) {
    const pick = this.vscode.window.createQuickPick();
    pick.title = params.title;
    pick.placeholder = `${params.extensionId} asks: choose one (Escape: none)`;
    pick.matchOnDescription = true;
    pick.items = params.options.map((o) => ({ label: o.label, description: o.description, value: o.value }));
    return this._ask(pick, token, () => (pick.selectedItems[0] ? pick.selectedItems[0].value : null));
  }

  /**
   * @param {UiInputParams} params
   * @param {Token} [token]
   * @returns {Promise<UiValueResult>}
   */
  input(params, token) {
    const box = this.vscode.window.createInputBox();
    box.title = params.title;
    box.prompt = `${params.extensionId} asks (Escape: no answer)`;
    if (params.placeholder) box.placeholder = params.placeholder;
    return this._ask(box, token, () => box.value);
  }

  /** Show `widget` (a QuickPick or InputBox) until accepted, hidden or cancelled. */
  _ask(/** @type {any} */ widget, /** @type {Token | undefined} */ token, /** @type {() => string | null} */ accepted) {
    return new Promise((resolve) => {
      let done = false;
      /** @type {{dispose(): void} | undefined} */
      let cancellation;
      const finish = (/** @type {string | null} */ value) => {
        if (done) return;
        done = true;
        if (cancellation) cancellation.dispose();
        widget.dispose();
        resolve({ value });
      };
      widget.onDidAccept(() => finish(accepted()));
      widget.onDidHide(() => finish(null));
      if (token) cancellation = token.onCancellationRequested(() => finish(null));
      widget.show();
    });
  }

  /**
   * A remote MCP server's sign-in page (OAuth), opened in the user's browser with `env.openExternal`;
   * when it cannot be opened, the user is shown the reason and the URL to open themselves.
   * @param {UiOpenUrlParams} params
   * @returns {Promise<UiOpenUrlResult>}
   */
  async openUrl(params) {
    let opened = false;
    try {
      opened = (await this.vscode.env.openExternal(this.vscode.Uri.parse(params.url))) === true;
    } catch (err) {
      this.output.info(`ui/openUrl: could not open the browser: ${err}`);
    }
    this.output.info(`ui/openUrl: ${params.reason}: ${opened ? 'opened in the browser' : 'not opened'}`);
    if (!opened) this.vscode.window.showInformationMessage(`${params.reason}: open ${params.url}`);
    return { opened };
  }

  /** @param {UiNotifyParams} params */
  notify(params) {
    const text = `${params.extensionId}: ${params.message}`;
    const show = params.level === 'error' ? 'showErrorMessage' : params.level === 'warning' ? 'showWarningMessage'
      : 'showInformationMessage';
    this.vscode.window[show](text);
  }

  /** @param {UiStatusParams} params */
  status(params) {
    const key = JSON.stringify([params.extensionId, params.key]);
    let item = this.items.get(key);
    if (params.text === null) {
      if (item) item.dispose();
      this.items.delete(key);
      return;
    }
    if (!item) {
      item = this.vscode.window.createStatusBarItem(this.vscode.StatusBarAlignment.Left, 9);
      item.tooltip = `${params.extensionId} (${params.key})`;
      this.items.set(key, item);
    }
    item.text = params.text;
    item.show();
  }

  /** Remove every status item (the sidecar that set them is gone). */
  clear() {
    for (const item of this.items.values()) item.dispose();
    this.items.clear();
  }
}

module.exports = { EditorUi, UI_CAPABILITIES, confirmDetail, ALLOW, DENY };
