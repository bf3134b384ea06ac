'use strict';
// The editor's side of `ctx.ui` (protocol.md § Extension API, `ctx.ui`): what a trusted extension
// asks the user through the sidecar, shown with VS Code's own widgets.
//
//   ui/confirm → a modal warning with Allow / Deny naming the extension, the tool and its arguments
//   ui/select  → a QuickPick (labels and descriptions)       ui/input → an InputBox (placeholder)
//   ui/openUrl → env.openExternal (a remote MCP server's sign-in page; not opened: a message with the URL)
//   ui/notify  → an information / warning / error message    ui/status → a status-bar item per
//                                                             (extension, key); `text: null` removes it
//   ui/elicit  → an MCP server's form (v4): a QuickPick per enum or boolean field, an InputBox per string
//                or number field, in the schema's order; Escape at any field declines
//
// Whatever the user does not answer is "no": a dismissed dialog answers `confirmed: false` or
// `value: null`. When the sidecar stops waiting (`$/cancelRequest`: its uiTimeoutMs ran out, or the
// tool call was cancelled) the QuickPick or InputBox is closed; a modal message cannot be closed by
// an extension in VS Code, so it stays until the user dismisses it and that answer is dropped.

/** What this client answers: sent as `initialize.capabilities.ui` (JSONL) or
 * `initializationOptions.capabilities.ui` (LSP). */
const UI_CAPABILITIES = Object.freeze({ confirm: true, select: true, input: true, notify: true, status: true,
  elicit: true, openUrl: true });

const ALLOW = 'Allow';
const DENY = 'Deny';

/** @typedef {import('./types/protocol').UiConfirmParams} UiConfirmParams */
/** @typedef {import('./types/protocol').UiSelectParams} UiSelectParams */
/** @typedef {import('./types/protocol').UiInputParams} UiInputParams */
/** @typedef {import('./types/protocol').UiNotifyParams} UiNotifyParams */
/** @typedef {import('./types/protocol').UiStatusParams} UiStatusParams */
/** @typedef {import('./types/protocol').UiConfirmResult} UiConfirmResult */
/** @typedef {import('./types/protocol').UiValueResult} UiValueResult */
/** @typedef {import('./types/protocol').UiElicitParams} UiElicitParams */
/** @typedef {import('./types/protocol').UiElicitResult} UiElicitResult */
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
   * An MCP server's `elicitation/create`: each flat field of `requestedSchema` asked in turn. A field
   * left empty is omitted (a required one declines); Escape, or the sidecar no longer waiting, declines.
   * @param {UiElicitParams} params
   * @param {Token} [token]
   * @returns {Promise<UiElicitResult>}
   */
  async elicit(params, token) {
    const schema = params.requestedSchema;
    const required = new Set(schema.required || []);
    /** @type {Record<string, any>} */
    const content = {};
    for (const [name, field] of Object.entries(schema.properties || {})) {
      const value = await this._field(params, name, /** @type {any} */ (field), required.has(name), token);
      if (value === undefined) {
        this.output.info(`ui/elicit from ${params.server ? `MCP server ${params.server}` : `extension ${params.extensionId}`}: declined`);
        return { action: 'decline' };
      }
      if (value !== null) content[name] = value;
    }
    this.output.info(`ui/elicit from ${params.server ? `MCP server ${params.server}` : `extension ${params.extensionId}`}: accepted`);
    return { action: 'accept', content };
  }

  /** One field's value; `null` when an optional one is left empty, `undefined` when the user declines. */
  async _field(/** @type {UiElicitParams} */ params, /** @type {string} */ name, /** @type {any} */ field,
    /** @type {boolean} */ required, /** @type {Token | undefined} */ token) {
    const title = `${params.server || params.extensionId}: ${params.message}`;
    const label = `${field.title || name}${field.description ? ` — ${field.description}` : ''}`;
    /** @type {{label: string, value: any}[] | null} */
    let options = null;
    if (Array.isArray(field.enum)) {
      options = field.enum.map((/** @type {any} */ v, /** @type {number} */ i) => ({
        label: String((field.enumNames || [])[i] || v), value: v }));
    } else if (Array.isArray(field.oneOf)) {
      options = field.oneOf.map((/** @type {any} */ o) => ({ label: String(o.title || o.const), value: o.const }));
    } else if (field.type === 'boolean') {
      options = [{ label: 'Yes', value: true }, { label: 'No', value: false }];
    }
    if (options) {
      const picked = await this.vscode.window.showQuickPick(options, { title, placeHolder: `${label} (Escape: decline)` },
        token);
      return picked ? picked.value : undefined;
    }
    const numeric = field.type === 'number' || field.type === 'integer';
    const pattern = field.type === 'integer' ? /^-?\d+$/ : /^-?\d+(\.\d+)?$/;
    const text = await this.vscode.window.showInputBox({
      title, prompt: `${label}${required ? '' : ' (optional)'}`,
      value: field.default !== undefined ? String(field.default) : undefined,
      validateInput: (/** @type {string} */ v) => {
        if (v === '') return required ? 'required' : undefined;
        return numeric && !pattern.test(v) ? `a ${field.type}` : undefined;
      },
    }, token);
    if (text === undefined) return undefined;
    if (text === '') return required ? undefined : null;
    return numeric ? Number(text) : text;
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
