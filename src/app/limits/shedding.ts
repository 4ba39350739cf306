import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply } from 'fastify';
import client from 'prom-client';
import { ApiError } from '../errors.ts';
import { classify } from './policy.ts';
import type { OverloadSettings } from './settings.ts';

const REASONS: Record<string, string> = {
  eventLoopDelay: 'event_loop_delay',
  eventLoopUtilization: 'event_loop_utilization',
  heapUsedBytes: 'heap_used',
  rssBytes: 'rss',
  healthCheck: 'health_check',
};

/**
 * Load shedding: past `maxInFlight` requests being served, or while @fastify/under-pressure
 * measures the event loop (or memory) past its ceiling, a request is answered 503 `overloaded`
 * with Retry-After before anything reads its body or touches the database — instead of joining
 * a queue that only grows. Operations routes (/healthz, /readyz, /metrics) and the docs are
 * neither counted nor shed.
 */
export async function registerShedding(app: FastifyInstance, settings: OverloadSettings, registry: client.Registry) {
  let inFlight = 0;
  new client.Gauge({
    name: 'checkstand_http_requests_in_flight',
    help: 'Requests being served (received and not yet answered), operations routes aside',
    registers: [registry],
    collect() {
      this.set(inFlight);
    },
  });
  const shed = new client.Counter({
    name: 'checkstand_requests_shed_total',
    help: 'Requests answered 503 overloaded at once, by the limit that was passed',
    labelNames: ['reason'] as const,
    registers: [registry],
  });

  function refuse(reply: FastifyReply, reason: string): never {
    shed.inc({ reason });
    reply.header('retry-after', settings.retryAfterSeconds);
    throw new ApiError('overloaded');
  }

  // The samples that span start-up (migrations, route compilation) measure the start, not load:
  // event-loop and memory ceilings are judged from the second sample after the server is ready.
  let judgingFrom = Infinity;
  app.addHook('onReady', async () => {
    judgingFrom = Date.now() + 2 * settings.sampleIntervalMs;
  });

  await app.register(underPressure, {
    maxEventLoopDelay: settings.maxEventLoopDelayMs,
    maxHeapUsedBytes: settings.maxHeapUsedBytes,
    maxRssBytes: settings.maxRssBytes,
    sampleInterval: settings.sampleIntervalMs,
    retryAfter: settings.retryAfterSeconds,
    pressureHandler: async (req, reply, type) => {
      if (classify(req.url) !== 'exempt' && Date.now() >= judgingFrom) refuse(reply, REASONS[type] ?? type);
    },
  });

  app.addHook('onRequest', async (req, reply) => {
    if (classify(req.url) === 'exempt') return;
    if (settings.maxInFlight > 0 && inFlight >= settings.maxInFlight) refuse(reply, 'in_flight');
    inFlight++;
    // 'close' comes once per response: when it is sent, or when the client went away first.
    reply.raw.once('close', () => {
      inFlight--;
    });
  });
}
