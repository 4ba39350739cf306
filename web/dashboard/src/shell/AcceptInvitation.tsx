import { Alert, Button, PasswordInput, TextInput } from '@mantine/core';
import { type FormEvent, useState } from 'react';
import { api, CheckstandError, setCsrfToken, unwrap } from '../lib/api.ts';
import { ApiErrorAlert } from '../lib/errors.tsx';
import { PublicCard, SignInLink, tokenFromLocation } from './PublicCard.tsx';

/**
 * The invitation mail's link: a name and a password (or, for an address that already has an
 * account, its current password and two-factor code), POST /v1/invitations/accept, which logs in;
 * then the dashboard loads with the new session.
 */
export function AcceptInvitationPage() {
  const [token] = useState(tokenFromLocation);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [totp, setTotp] = useState('');
  const [needsTotp, setNeedsTotp] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [gone, setGone] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = { token, password, ...(name.trim() ? { name: name.trim() } : {}), ...(needsTotp && totp.trim() ? { totp_code: totp.trim() } : {}) };
      const session = unwrap(await api.POST('/v1/invitations/accept', { body })).data;
      setCsrfToken(session.csrf_token);
      // The answer set the session cookie: the dashboard's home, signed in.
      window.location.assign('/dashboard/');
    } catch (err) {
      if (err instanceof CheckstandError && err.code === 'invalid_credentials' && /totp_code/.test(err.message)) setNeedsTotp(true);
      if (err instanceof CheckstandError && (err.code === 'invitation_expired' || err.status === 404)) setGone(true);
      setError(err);
      setBusy(false);
    }
  }

  if (!token) {
    return (
      <PublicCard title="Accept the invitation">
        <Alert color="yellow" role="alert" title="This link is incomplete">
          The invitation link carries a token (<code>?token=csi_…</code>). Open the link from the invitation mail again, whole.
        </Alert>
        <SignInLink />
      </PublicCard>
    );
  }

  return (
    <PublicCard title="Accept the invitation" intro="Join the team on Checkstand. New here: choose your name and a password. Already have a Checkstand account with this address: enter its password.">
      <form onSubmit={submit} aria-labelledby="public-title">
        <TextInput label="Your name" autoComplete="name" value={name} onChange={(e) => setName(e.currentTarget.value)} maxLength={200} mb="sm" autoFocus />
        <PasswordInput
          label="Password"
          description="At least 10 characters, not your e-mail address, not a common password"
          autoComplete="new-password"
          required
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          mb="sm"
        />
        {needsTotp && (
          <TextInput
            label="Two-factor code"
            description="Your account has two-factor authentication on: the 6-digit code of your authenticator app"
            inputMode="numeric"
            autoComplete="one-time-code"
            pattern="[0-9]{6}"
            maxLength={6}
            required
            value={totp}
            onChange={(e) => setTotp(e.currentTarget.value)}
            mb="sm"
          />
        )}
        <ApiErrorAlert error={error} title={gone ? 'This invitation cannot be used' : 'Could not accept the invitation'} />
        <Button type="submit" loading={busy} disabled={gone} fullWidth mt="sm">
          Accept and sign in
        </Button>
      </form>
      <SignInLink>Already a member? Sign in</SignInLink>
    </PublicCard>
  );
}
