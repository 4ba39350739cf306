import { Alert, Anchor, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, CheckstandError, setCsrfToken, unwrap } from '../lib/api.ts';
import { ApiErrorAlert } from '../lib/errors.tsx';
import { SESSION_KEY } from '../lib/session.tsx';
import { PublicCard } from './PublicCard.tsx';
import { publicPageFor } from './PublicPages.tsx';

/**
 * What a signed-out visitor sees: the page an account mail links to (PublicPages.tsx), or the
 * sign-in form, which also asks for a password reset link.
 */
export function LoginPage() {
  const page = publicPageFor(window.location.pathname);
  if (page) return <>{page()}</>;
  return <SignInPage />;
}

/** E-mail and password (and the two-factor code when the account has it on): POST /v1/sessions. */
function SignInPage() {
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [totp, setTotp] = useState('');
  const [needsTotp, setNeedsTotp] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [forgot, setForgot] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = { email, password, ...(needsTotp && totp ? { totp_code: totp.trim() } : {}) };
      const session = unwrap(await api.POST('/v1/sessions', { body })).data;
      setCsrfToken(session.csrf_token);
      qc.setQueryData(SESSION_KEY, session);
    } catch (err) {
      if (err instanceof CheckstandError && err.code === 'totp_required') {
        setNeedsTotp(true);
      } else {
        setError(err);
      }
    } finally {
      setBusy(false);
    }
  }

  if (forgot) return <ForgotPassword email={email} onBack={() => setForgot(false)} />;

  return (
    <Center mih="100vh" bg="gray.0" component="main">
      <Paper withBorder shadow="sm" p="xl" w={380} radius="md">
        <form onSubmit={submit} aria-labelledby="login-title">
          <Stack>
            <Title order={1} size="h2" id="login-title">
              Checkstand
            </Title>
            <Text c="dimmed" size="sm">
              Sign in to the merchant dashboard.
            </Text>
            <TextInput label="E-mail" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.currentTarget.value)} data-autofocus autoFocus />
            <PasswordInput label="Password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.currentTarget.value)} />
            {needsTotp && (
              <>
                <Alert color="blue" role="status">
                  This account has two-factor authentication on: enter the 6-digit code from your authenticator app.
                </Alert>
                <TextInput label="Two-factor code" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9]{6}" maxLength={6} required value={totp} onChange={(e) => setTotp(e.currentTarget.value)} autoFocus />
              </>
            )}
            <ApiErrorAlert error={error} title="Could not sign in" />
            <Button type="submit" loading={busy} fullWidth>
              Sign in
            </Button>
            <Anchor component="button" type="button" size="sm" onClick={() => setForgot(true)} ta="left">
              Forgot password?
            </Anchor>
            <Text size="xs" c="dimmed">
              <code>npm start</code> prints the demo owner's e-mail and password once.
            </Text>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}

/** POST /v1/password-resets: always the same answer, whether the address has an account or not. */
function ForgotPassword({ email: initial, onBack }: { email: string; onBack: () => void }) {
  const [email, setEmail] = useState(initial);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [sent, setSent] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      unwrap(await api.POST('/v1/password-resets', { body: { email: email.trim() } }));
      setSent(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <PublicCard title="Reset your password" intro="Enter the e-mail address of your account: we mail you a link to choose a new password.">
      {sent ? (
        <Alert color="green" role="status" title="Check your mail">
          If an account uses {email.trim()}, a reset link is on its way. It works once, within an hour.
        </Alert>
      ) : (
        <form onSubmit={submit} aria-labelledby="public-title">
          <TextInput label="E-mail" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.currentTarget.value)} mb="sm" autoFocus />
          <ApiErrorAlert error={error} title="Could not ask for a reset link" />
          <Button type="submit" loading={busy} fullWidth mt="sm">
            Mail me a reset link
          </Button>
        </form>
      )}
      <Anchor component="button" type="button" size="sm" onClick={onBack} ta="left">
        Back to sign in
      </Anchor>
    </PublicCard>
  );
}
