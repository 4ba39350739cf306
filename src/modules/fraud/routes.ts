import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { ListQuery } from '../../app/schemas.ts';
import { CreateFraudRule, DeletedFraudRule, FraudRule, FraudRuleParams, UpdateFraudRule } from './schemas.ts';

const tags = ['payments-config'];
const RuleEnvelope = Envelope(FraudRule);

const RULES_DESCRIPTION =
  'A velocity rule refuses a card first payment before any gateway call once `threshold` events of its `metric` fall within the last ' +
  '`window_seconds` for the payment\'s `dimension`: the payment answers 402 `payment_declined` with `decline_code` `velocity_blocked` ' +
  "and the message `Blocked by fraud rule '<name>'`, and a declined transaction is recorded. A refused payment is not counted. " +
  'No rule exists until you create one.';

export function registerFraudRoutes(app: Http, ctx: AppContext): void {
  const fraud = ctx.services.fraud;

  app.post(
    '/v1/fraud-rules',
    {
      config: { permission: 'gateways:manage', audit: 'fraud_rule.created' },
      schema: {
        tags,
        summary: 'Create a fraud velocity rule',
        description:
          RULES_DESCRIPTION +
          ' `attempts` counts the payments the rules let through; `declines` counts the payments a gateway declined, and a payment still ' +
          'waiting for its gateway counts as a possible decline until its answer arrives, so concurrent payments never overshoot the threshold.',
        body: CreateFraudRule,
        response: { 201: RuleEnvelope },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await fraud.createRule(teamOf(req), req.body))),
  );
  app.get(
    '/v1/fraud-rules',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'List fraud velocity rules, newest first', querystring: ListQuery.strict(), response: { 200: ListEnvelope(FraudRule) } } },
    async (req) => {
      const page = await fraud.listRules(teamOf(req), req.query);
      return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
    },
  );
  app.get(
    '/v1/fraud-rules/:id',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'Retrieve a fraud velocity rule', params: FraudRuleParams, response: { 200: RuleEnvelope } } },
    async (req) => ok(await fraud.getRule(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/fraud-rules/:id',
    {
      config: { permission: 'gateways:manage', audit: 'fraud_rule.updated' },
      schema: {
        tags,
        summary: 'Update a fraud velocity rule',
        description:
          'Rename, enable or disable a rule, or change its threshold or window (applied from the next payment to the events already counted). ' +
          '`metric`, `dimension` and `bin_length` are fixed: delete the rule and create another.',
        params: FraudRuleParams,
        body: UpdateFraudRule,
        response: { 200: RuleEnvelope },
      },
    },
    async (req) => ok(await fraud.updateRule(teamOf(req), req.params.id, req.body)),
  );
  app.delete(
    '/v1/fraud-rules/:id',
    { config: { permission: 'gateways:manage', audit: 'fraud_rule.deleted' }, schema: { tags, summary: 'Delete a fraud velocity rule and what it counted', params: FraudRuleParams, response: { 200: Envelope(DeletedFraudRule) } } },
    async (req) => ok(await fraud.deleteRule(teamOf(req), req.params.id)),
  );
}
