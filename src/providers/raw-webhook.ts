/** Headers as Fastify (a record, any case) or fetch (a Headers object) give them. */
export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

/** A header by its lower-case name, whatever the bag. */
export function headerValue(headers: HeaderBag, name: string): string | string[] | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  if (name in bag) return bag[name];
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : bag[key];
}

/** The raw body as bytes, without copying a Buffer or Uint8Array. */
export function toBytes(raw: Buffer | Uint8Array | string): Buffer {
  return typeof raw === 'string' ? Buffer.from(raw, 'utf8') : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
}
