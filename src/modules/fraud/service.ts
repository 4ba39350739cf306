import { configCache } from '../../app/cache.ts';
import { notFound } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Store, Tx } from '../../db/database.ts';
import { presentFields } from '../../db/helpers.ts';
import { listPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';
import { type CreateFraudRule, DEFAULT_BIN_LENGTH, type FraudRule, type UpdateFraudRule } from './schemas.ts';

export const FRAUD_RULE_PREFIX = 'fr';

export interface ListPage<T> {
  items: T[];
  has_more: boolean;
}

/** What a card first payment is screened on. The card number stays in memory: only keyed hashes are stored. */
export interface ScreenedPayment {
  teamId: string;
  orderId: string;
  cardNumber: string;
  email: string | null;
  ipAddress: string | null;
}

/** `holds`: the payment took velocity holds (a declines rule counted it), which its outcome settles. */
export type Screening = { kind: 'clear'; holds: boolean } | { kind: 'blocked'; rule: Row<'fraud_rules'> };

/** The one place a rule row becomes what the API shows (never team_id or seq). */
export function fraudRuleView(r: Row<'fraud_rules'>): FraudRule {
  return {
    object: 'fraud_rule',
    id: r.id,
    name: r.name,
    metric: r.metric,
    dimension: r.dimension,
    bin_length: r.bin_length,
    threshold: r.threshold,
    window_seconds: r.window_seconds,
    is_enabled: r.is_enabled,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

/** The text of a payment refused by a rule: names the rule so the merchant can find it. */
export function velocityBlockText(rule: Pick<Row<'fraud_rules'>, 'name'>): string {
  return `Blocked by fraud rule '${rule.name}'`;
}

/**
 * Fraud velocity rules: "at most <threshold> <metric> per <dimension> within <window_seconds>".
 * `screen` runs in the transaction that opens a card first payment, before any gateway call;
 * `settle` in the transaction that records the payment's outcome.
 */
export class FraudService {
  /**
   * Each team's enabled rules, cached per process and dropped after each write here. Only the rules
   * are cached: the counts they are checked against are read under the key's lock on every screening.
   */
  private readonly enabled;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
  ) {
    this.enabled = configCache<{ rules: readonly Readonly<Row<'fraud_rules'>>[] }>(store, 'fraud_rules');
  }

  // ---- the rules (per team)

  async createRule(teamId: string, input: CreateFraudRule): Promise<FraudRule> {
    const row = await this.store.run((db) =>
      repo.insertRule(db, {
        id: `${FRAUD_RULE_PREFIX}_${randomToken()}`,
        team_id: teamId,
        name: input.name,
        metric: input.metric,
        dimension: input.dimension,
        bin_length: input.dimension === 'bin' ? (input.bin_length ?? DEFAULT_BIN_LENGTH) : null,
        threshold: input.threshold,
        window_seconds: input.window_seconds,
        is_enabled: input.is_enabled,
      }),
    );
    this.enabled.delete(teamId);
    return fraudRuleView(row);
  }

  async getRule(teamId: string, id: string): Promise<FraudRule> {
    const row = await this.store.run((db) => repo.findRule(db, teamId, id));
    if (!row) throw notFound('Fraud rule');
    return fraudRuleView(row);
  }

  /** A new threshold or window applies from the next screening, to the events already counted. */
  async updateRule(teamId: string, id: string, input: UpdateFraudRule): Promise<FraudRule> {
    const patch = presentFields(input);
    const row = await this.store.run((db) => (patch ? repo.updateRule(db, teamId, id, patch) : repo.findRule(db, teamId, id)));
    this.enabled.delete(teamId);
    if (!row) throw notFound('Fraud rule');
    return fraudRuleView(row);
  }

  async deleteRule(teamId: string, id: string): Promise<FraudRule & { deleted: true }> {
    const row = await this.store.run((db) => repo.deleteRule(db, teamId, id));
    this.enabled.delete(teamId);
    if (!row) throw notFound('Fraud rule');
    return { ...fraudRuleView(row), deleted: true };
  }

  listRules(teamId: string, query: ListQuery): Promise<ListPage<FraudRule>> {
    return this.store.run((db) =>
      listPage(
        db,
        'fraud_rules',
        teamId,
        query,
        (afterSeq) => repo.listRules(db, teamId, { afterSeq, limit: query.limit, createdGte: query.created_gte, createdLte: query.created_lte }),
        fraudRuleView,
      ),
    );
  }

  // ---- velocity

  /**
   * Screens a card first payment against the team's enabled rules. Each (rule, key) is locked, then
   * counted; only when no rule is at its threshold are the payment's events written (an attempt, or a
   * hold for a declines rule), still under the locks, so concurrent payments on one key are counted
   * one after another and none slips past. A refused payment is counted by no rule.
   */
  async screen(trx: Tx, p: ScreenedPayment): Promise<Screening> {
    const { rules } = (await this.enabled.get(p.teamId, async () => ({ rules: Object.freeze((await repo.enabledRules(trx, p.teamId)).map((r) => Object.freeze(r))) })))!;
    const keyed = rules.flatMap((rule) => {
      const key = this.keyOf(rule, p);
      return key === null ? [] : [{ rule, key }];
    });
    const counted: typeof keyed = [];
    for (const { rule, key } of keyed) {
      // A rule another process deleted within the cache's TTL is gone: it counts nothing.
      if (!(await repo.lockKey(trx, p.teamId, rule.id, key))) continue;
      await repo.pruneKey(trx, rule.id, key, rule.window_seconds);
      if ((await repo.countKey(trx, rule, key)) >= rule.threshold) return { kind: 'blocked', rule };
      counted.push({ rule, key });
    }
    const events = counted.map(({ rule, key }) => ({ team_id: p.teamId, rule_id: rule.id, key_hash: key, order_id: p.orderId, kind: rule.metric === 'attempts' ? 'attempt' : 'hold' }) as const);
    await repo.insertEvents(trx, events);
    return { kind: 'clear', holds: events.some((e) => e.kind === 'hold') };
  }

  /**
   * The payment's outcome is recorded: when a gateway declined it, its holds become declines
   * (counted from now); any other outcome drops them. Nothing to do when it had none.
   */
  async settle(trx: Tx, teamId: string, orderId: string, gatewayDeclined: boolean): Promise<void> {
    if (gatewayDeclined) await repo.holdsToDeclines(trx, teamId, orderId);
    else await repo.dropHolds(trx, teamId, orderId);
  }

  /** The keyed hash a rule counts this payment under; null when the payment has nothing to count it by. */
  private keyOf(rule: Row<'fraud_rules'>, p: ScreenedPayment): string | null {
    const digits = p.cardNumber.replace(/\D/g, '');
    const value = ((): string | null => {
      switch (rule.dimension) {
        case 'card_fingerprint':
          return digits;
        case 'bin':
          return digits.slice(0, rule.bin_length ?? DEFAULT_BIN_LENGTH);
        case 'email':
          return p.email?.trim().toLowerCase() ?? null;
        case 'ip_address':
          return p.ipAddress;
        case 'order':
          return p.orderId;
      }
    })();
    return value ? this.secrets.keyedHash(`fraud-${rule.dimension}`, value) : null;
  }
}
