import type { AppContext } from '../../app/context.ts';
import { Envelope, listed, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { DoctorReport } from '../../app/openapi-responses.ts';
import {
  BinBlock,
  CreateBinBlock,
  CreateGateway,
  CreateRouter,
  CreateTestCard,
  DeletedBinBlock,
  DeletedTestCard,
  Gateway,
  IdParams,
  Router,
  StrictListQuery,
  TestCard,
  UpdateGateway,
  UpdateRouter,
} from './schemas.ts';
import { GatewayDoctor } from './doctor.ts';
import { nmiAdapter } from '../../providers/nmi/adapter.ts';
import { nmiProvider } from '../../providers/nmi/provider.ts';
import { threeDsAdapter } from '../../providers/threeds/adapter.ts';
import { threeDsProvider } from '../../providers/threeds/provider.ts';

const tags = ['payments-config'];

const GatewayEnvelope = Envelope(Gateway);
const RouterEnvelope = Envelope(Router);

export function registerGatewayRoutes(app: Http, ctx: AppContext): void {
  const gateways = ctx.services.gateways;

  // ---- gateways

  app.post(
    '/v1/gateways',
    {
      config: { permission: 'gateways:manage', audit: 'gateway.created' },
      schema: {
        tags,
        summary: 'Create a gateway',
        description: 'A card gateway account. `credentials` are stored encrypted and never returned; responses show `credentials_hint`.',
        body: CreateGateway,
        response: { 201: GatewayEnvelope },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await gateways.createGateway(teamOf(req), req.body))),
  );
  app.get(
    '/v1/gateways',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'List gateways, newest first', querystring: StrictListQuery, response: { 200: ListEnvelope(Gateway) } } },
    async (req) => listed(await gateways.listGateways(teamOf(req), req.query)),
  );
  app.get(
    '/v1/gateways/:id',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'Retrieve a gateway', params: IdParams, response: { 200: GatewayEnvelope } } },
    async (req) => ok(await gateways.getGateway(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/gateways/:id',
    {
      config: { permission: 'gateways:manage', audit: 'gateway.updated' },
      schema: {
        tags,
        summary: 'Update a gateway',
        description: 'The kind is fixed once created; `credentials` replaces the stored credentials as a whole.',
        params: IdParams,
        body: UpdateGateway,
        response: { 200: GatewayEnvelope },
      },
    },
    async (req) => ok(await gateways.updateGateway(teamOf(req), req.params.id, req.body)),
  );

  const doctor = new GatewayDoctor(ctx.store, gateways, { nmi: nmiProvider(nmiAdapter), threeds: threeDsProvider(threeDsAdapter) });
  app.post(
    '/v1/gateways/:id/doctor',
    {
      config: { permission: 'gateways:manage' },
      schema: {
        tags,
        summary: 'Diagnose a gateway',
        description:
          'Named checks, each `pass`, `warn` or `fail` with a plain-language `fix`. NMI: the security key authenticates against the Query API; the Customer Vault is enabled. 3-D Secure: the key authenticates; its mode (`sk_test_`) matches test mode; a risk SDK key is saved; the webhook points at this install; a signed test delivery verifies with the saved secret; clock skew. Changes nothing at the gateway except one test delivery. See docs/providers.md.',
        params: IdParams,
        response: { 200: Envelope(DoctorReport) },
      },
    },
    async (req) => {
      const r = await doctor.run(teamOf(req), req.params.id);
      return ok(r, r.status === 'pass' ? 'Every check passed.' : r.status === 'warn' ? 'Some checks need a look.' : 'Some checks failed: see each fix.');
    },
  );

  // ---- payment orchestrators (payment routers)

  app.post(
    '/v1/payment-orchestrators',
    {
      config: { permission: 'gateways:manage', audit: 'orchestrator.created' },
      schema: {
        tags,
        summary: 'Create a payment orchestrator',
        description:
          'Routes a card payment over several gateways of the team: by ascending `priority`, or at random by `weight`, ' +
          'trying at most `max_attempts` of them. Each gateway may be listed once; inactive gateways are skipped when charging.',
        body: CreateRouter,
        response: { 201: RouterEnvelope },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await gateways.routers.create(teamOf(req), req.body))),
  );
  app.get(
    '/v1/payment-orchestrators',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'List payment orchestrators, newest first', querystring: StrictListQuery, response: { 200: ListEnvelope(Router) } } },
    async (req) => listed(await gateways.routers.list(teamOf(req), req.query)),
  );
  app.get(
    '/v1/payment-orchestrators/:id',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'Retrieve a payment orchestrator with its members', params: IdParams, response: { 200: RouterEnvelope } } },
    async (req) => ok(await gateways.routers.get(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/payment-orchestrators/:id',
    {
      config: { permission: 'gateways:manage', audit: 'orchestrator.updated' },
      schema: {
        tags,
        summary: 'Update a payment orchestrator',
        description: '`members`, when sent, replaces the whole member list.',
        params: IdParams,
        body: UpdateRouter,
        response: { 200: RouterEnvelope },
      },
    },
    async (req) => ok(await gateways.routers.update(teamOf(req), req.params.id, req.body)),
  );

  // ---- BIN blacklist

  app.post(
    '/v1/bin-blacklist',
    {
      config: { permission: 'gateways:manage', audit: 'bin_block.created' },
      schema: {
        tags,
        summary: 'Block a BIN prefix',
        description: 'Card payments whose number starts with `prefix` (6 to 8 digits) are refused. A prefix already listed answers 409.',
        body: CreateBinBlock,
        response: { 201: Envelope(BinBlock) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await gateways.cardLists.addBinBlock(teamOf(req), req.body))),
  );
  app.get(
    '/v1/bin-blacklist',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'List blocked BIN prefixes, newest first', querystring: StrictListQuery, response: { 200: ListEnvelope(BinBlock) } } },
    async (req) => listed(await gateways.cardLists.listBinBlocks(teamOf(req), req.query)),
  );
  app.delete(
    '/v1/bin-blacklist/:id',
    { config: { permission: 'gateways:manage', audit: 'bin_block.deleted' }, schema: { tags, summary: 'Unblock a BIN prefix', params: IdParams, response: { 200: Envelope(DeletedBinBlock) } } },
    async (req) => ok(await gateways.cardLists.deleteBinBlock(teamOf(req), req.params.id)),
  );

  // ---- test cards

  app.post(
    '/v1/test-cards',
    {
      config: { permission: 'gateways:manage', audit: 'test_card.created' },
      schema: {
        tags,
        summary: 'List a card number as a test card',
        description:
          'Payments with this card are test payments. The number is stored only as a keyed hash and its last 4 digits, and is never returned. ' +
          'A number already listed answers 409.',
        body: CreateTestCard,
        response: { 201: Envelope(TestCard) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await gateways.cardLists.addTestCard(teamOf(req), req.body))),
  );
  app.get(
    '/v1/test-cards',
    { config: { permission: 'gateways:manage' }, schema: { tags, summary: 'List test cards, newest first', querystring: StrictListQuery, response: { 200: ListEnvelope(TestCard) } } },
    async (req) => listed(await gateways.cardLists.listTestCards(teamOf(req), req.query)),
  );
  app.delete(
    '/v1/test-cards/:id',
    { config: { permission: 'gateways:manage', audit: 'test_card.deleted' }, schema: { tags, summary: 'Remove a test card', params: IdParams, response: { 200: Envelope(DeletedTestCard) } } },
    async (req) => ok(await gateways.cardLists.deleteTestCard(teamOf(req), req.params.id)),
  );
}
