import type { Config } from '../../app/config.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Store } from '../../db/database.ts';
import type { AccountMailer } from './mailer.ts';

/** What every users use case needs. */
export interface UsersDeps {
  store: Store;
  secrets: Secrets;
  mailer: AccountMailer;
  config: Pick<Config, 'publicBaseUrl' | 'host' | 'port' | 'cookieSecure'>;
}

/** Where links in account mail point: PUBLIC_BASE_URL or http://HOST:PORT. */
export function baseUrlOf(config: UsersDeps['config']): string {
  return (config.publicBaseUrl ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`).replace(/\/+$/, '');
}

export const TOKEN_LENGTH = 43;
