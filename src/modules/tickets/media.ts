/**
 * What an attachment may be: an allow-list of media types, each checked against the file's own
 * bytes (its magic number; text must be UTF-8 without control characters), never the declared
 * Content-Type alone. SVG and HTML are left out on purpose: they carry script.
 */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

export const ATTACHMENT_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'text/plain', 'text/csv'] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

const EXTENSIONS: Record<AttachmentType, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'text/csv': 'csv',
};

const startsWith = (b: Buffer, sig: readonly number[], at = 0) => b.length >= at + sig.length && sig.every((v, i) => b[at + i] === v);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

const SIGNATURES: Record<Exclude<AttachmentType, 'text/plain' | 'text/csv'>, (b: Buffer) => boolean> = {
  'image/png': (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'image/jpeg': (b) => startsWith(b, [0xff, 0xd8, 0xff]),
  'image/gif': (b) => startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a')),
  'image/webp': (b) => startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8),
  'application/pdf': (b) => startsWith(b, ascii('%PDF-')),
};

// Tab, line feed, form feed and carriage return are text; every other C0 control and DEL is not.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this looks for
const CONTROL = /[\u0000-\u0008\u000B\u000E-\u001F\u007F]/;

function isText(b: Buffer): boolean {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(b);
  } catch {
    return false;
  }
  return !CONTROL.test(text);
}

/** The declared type, lower-cased and without parameters (`text/csv; charset=utf-8` → `text/csv`); '' when none was sent. */
export function mediaTypeOf(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

export function isAllowedType(type: string): type is AttachmentType {
  return (ATTACHMENT_TYPES as readonly string[]).includes(type);
}

/** Whether the bytes are what `type` says they are. */
export function bytesMatch(type: AttachmentType, bytes: Buffer): boolean {
  if (type === 'text/plain' || type === 'text/csv') return isText(bytes);
  return SIGNATURES[type](bytes);
}

/** A name safe in a Content-Disposition header and on any file system: no paths, no control characters; a default from the type. */
export function cleanFilename(given: string | undefined, type: AttachmentType): string {
  const base = [...((given ?? '').split(/[/\\]/).pop() ?? '')].filter((c) => c >= ' ' && c !== '\u007f' && c !== '"').join('').trim();
  return base.slice(0, 255) || `attachment.${EXTENSIONS[type]}`;
}

/** RFC 6266: an ASCII fallback and the UTF-8 name (RFC 8187). */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/[\\"]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
