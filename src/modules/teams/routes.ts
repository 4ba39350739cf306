import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { isTimeZone } from '../subscriptions/schedule.ts';

const Team = z
  .object({
    object: z.literal('team'),
    id: z.string(),
    name: z.string(),
    time_zone: z.string().describe('IANA time zone: card subscriptions fall due on their billing day at the rebill hour (REBILL_HOUR, default 03:00) here'),
    created_at: z.string(),
  })
  .meta({ id: 'Team' });

const UpdateTeam = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    time_zone: z
      .string()
      .max(64)
      .refine(isTimeZone, 'must be an IANA time zone such as America/New_York or UTC')
      .optional()
      .describe("Changing it moves every live card subscription's next billing day to the rebill hour in the new zone"),
  })
  .strict()
  .meta({ id: 'UpdateTeam' });

/** The team the token belongs to: its name and the time zone its billing runs in. */
export function registerTeamRoutes(app: Http, ctx: AppContext): void {
  const tags = ['records'];
  app.get('/v1/team', { config: { permission: 'team:view' }, schema: { tags, summary: "The token's team", response: { 200: Envelope(Team) } } }, async (req) => ok(await ctx.services.teams.get(teamOf(req))));
  app.patch(
    '/v1/team',
    { config: { permission: 'settings:manage', audit: 'team.updated' }, schema: { tags, summary: "Update the team's name or time zone", body: UpdateTeam, response: { 200: Envelope(Team) } } },
    async (req) => ok(await ctx.services.subscriptions.updateTeam(teamOf(req), req.body), 'Team updated.'),
  );
}
