import { Alert, Button, PasswordInput } from '@mantine/core';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../lib/api.ts';
import { ApiErrorAlert } from '../lib/errors.tsx';
import { PublicCard, SignInLink, tokenFromLocation } from './PublicCard.tsx';

/** The reset mail's link: a new password (twice), POST /v1/password-resets/confirm; every session of the account ends, so: sign in again. */
export function ResetPasswordPage() {
  const [token] = useState(tokenFromLocation);
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [mismatch, setMismatch] = useState(false);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(null);
    if (password !== repeat) {
      setMismatch(true);
      return;
    }
    setMismatch(false);
    setBusy(true);
    try {
      unwrap(await api.POST('/v1/password-resets/confirm', { body: { token, password } }));
      setDone(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  if (!token) {
    return (
      <PublicCard title="Choose a new password">
        <Alert color="yellow" role="alert" title="This link is incomplete">
          The reset link carries a token (<code>?token=csr_…</code>). Open the link from the mail again, whole, or ask for a new one from the sign-in page.
        </Alert>
        <SignInLink />
      </PublicCard>
    );
  }

  if (done) {
    return (
      <PublicCard title="Password changed">
        <Alert color="green" role="status" title="Your new password is set">
          Every session of your account was logged out: sign in with the new password.
        </Alert>
        <Button component="a" href="/dashboard/" fullWidth>
          Sign in
        </Button>
      </PublicCard>
    );
  }

  return (
    <PublicCard title="Choose a new password" intro="The link works once, within an hour of the mail.">
      <form onSubmit={submit} aria-labelledby="public-title">
        <PasswordInput
          label="New password"
          description="At least 10 characters, not your e-mail address, not a common password"
          autoComplete="new-password"
          required
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          mb="sm"
          autoFocus
        />
        <PasswordInput
          label="Repeat the new password"
          autoComplete="new-password"
          required
          value={repeat}
          onChange={(e) => setRepeat(e.currentTarget.value)}
          error={mismatch ? 'The two passwords differ' : undefined}
          mb="sm"
        />
        <ApiErrorAlert error={error} title="Could not change the password" />
        <Button type="submit" loading={busy} fullWidth mt="sm">
          Set the new password
        </Button>
      </form>
      <SignInLink>Back to sign in</SignInLink>
    </PublicCard>
  );
}
