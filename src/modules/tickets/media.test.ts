import { describe, expect, it } from 'vitest';
import { bytesMatch, cleanFilename, contentDisposition, mediaTypeOf } from './media.ts';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const EXE = Buffer.concat([Buffer.from('MZ'), Buffer.from([0x90, 0, 3, 0, 0, 0, 4, 0]), Buffer.from('This program cannot be run in DOS mode.')]);

describe('attachment media checks', () => {
  it('checks the bytes against the declared type', () => {
    expect(bytesMatch('image/png', PNG)).toBe(true);
    expect(bytesMatch('image/png', EXE)).toBe(false);
    expect(bytesMatch('image/jpeg', PNG)).toBe(false);
    expect(bytesMatch('application/pdf', Buffer.from('%PDF-1.7\n'))).toBe(true);
    expect(bytesMatch('image/gif', Buffer.from('GIF89a....'))).toBe(true);
    expect(bytesMatch('image/webp', Buffer.from('RIFF\u0000\u0000\u0000\u0000WEBPVP8 '))).toBe(true);
  });
  it('text is UTF-8 without control characters', () => {
    expect(bytesMatch('text/plain', Buffer.from('Bonjour, ça va ?\r\n\tok'))).toBe(true);
    expect(bytesMatch('text/csv', Buffer.from('a,b\n1,2\n'))).toBe(true);
    expect(bytesMatch('text/plain', EXE)).toBe(false);
    expect(bytesMatch('text/plain', Buffer.from([0xc3, 0x28]))).toBe(false);
  });
  it('reads the media type, names the file safely', () => {
    expect(mediaTypeOf('Text/CSV; charset=utf-8')).toBe('text/csv');
    expect(mediaTypeOf(undefined)).toBe('');
    expect(cleanFilename('../../etc/passwd', 'text/plain')).toBe('passwd');
    expect(cleanFilename('C:\\x\\scan "1".png', 'image/png')).toBe('scan 1.png');
    expect(cleanFilename(undefined, 'application/pdf')).toBe('attachment.pdf');
    expect(contentDisposition('reçu (1).pdf')).toBe(`attachment; filename="re_u (1).pdf"; filename*=UTF-8''re%C3%A7u%20%281%29.pdf`);
  });
});
