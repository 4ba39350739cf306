import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard. A merchant's webhook URL must reach the public internet: loopback, private,
 * link-local (cloud metadata at 169.254.169.254), unspecified, CGNAT, multicast, reserved and
 * the IPv6 forms that embed such IPv4 addresses are refused. Checked at registration (literal
 * IPs and every address the host name resolves to) and again when a delivery connects, inside
 * the socket's own DNS lookup, so a name that re-resolves to an internal address (DNS rebinding)
 * is refused on the address actually dialled.
 */

export class TargetRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_TARGET_REFUSED';
  constructor(readonly reason: string) {
    super(`target address not allowed: ${reason}`);
  }
}

const RANGE_NAMES: Record<string, string> = {
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private address',
  uniqueLocal: 'a private (unique local) address',
  linkLocal: 'a link-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
};

/** Why the address may not be a webhook target, or null when it is a public unicast address. */
export function addressRefusal(address: string): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // process() turns IPv4-mapped IPv6 (::ffff:127.0.0.1) into the IPv4 address it carries.
    ip = ipaddr.process(address.replace(/^\[|\]$/g, ''));
  } catch {
    return `${address} is not an IP address`;
  }
  const range = ip.range();
  if (range === 'unicast') return null;
  const text = ip.toString();
  return `${text} is ${RANGE_NAMES[range] ?? `in a reserved range (${range})`}`;
}

/** The URL's host as an IP literal, or null when it is a name. */
export function literalHost(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(host) ? host : null;
}

export type ResolveAll = (hostname: string) => Promise<string[]>;

export const resolveAll: ResolveAll = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Why the URL may not be a webhook target, or null. A literal IP is checked as is; a name is
 * resolved and refused when any of its addresses is refused (or when it does not resolve).
 */
export async function targetRefusal(url: URL, resolve: ResolveAll = resolveAll): Promise<string | null> {
  const literal = literalHost(url);
  if (literal) return addressRefusal(literal);
  let addresses: string[];
  try {
    addresses = await resolve(url.hostname);
  } catch (err) {
    return `${url.hostname} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`;
  }
  if (addresses.length === 0) return `${url.hostname} does not resolve`;
  for (const a of addresses) {
    const why = addressRefusal(a);
    if (why) return `${url.hostname} resolves to ${why.replace(/^\S+ is /, `${a}, `)}`;
  }
  return null;
}

/**
 * A `lookup` for node:http(s) that refuses the connection when any address of the name is not
 * allowed: the check runs on the very answer the socket connects to.
 */
export function guardedLookup(): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      for (const a of addresses) {
        const why = addressRefusal(a.address);
        if (why) return callback(new TargetRefusedError(`${hostname} resolves to ${why.replace(/^\S+ is /, `${a.address}, `)}`), '', 4);
      }
      if (options.all) return (callback as unknown as (e: null, all: dns.LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 4);
      callback(null, first.address, first.family);
    });
  };
}
