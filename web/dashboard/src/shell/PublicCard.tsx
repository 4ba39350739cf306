import { Anchor, Center, Paper, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** The link's token (`?token=…`), read from the address bar. */
export function tokenFromLocation(): string {
  return new URLSearchParams(window.location.search).get('token')?.trim() ?? '';
}

/** The card every signed-out page shows in: the product's name, the page's title, the form. */
export function PublicCard({ title, intro, children }: { title: string; intro?: ReactNode; children: ReactNode }) {
  return (
    <Center mih="100vh" bg="gray.0" component="main">
      <Paper withBorder shadow="sm" p="xl" w={400} radius="md">
        <Stack>
          <Text fw={700} c="dimmed" size="sm">
            Checkstand
          </Text>
          <Title order={1} size="h2" id="public-title">
            {title}
          </Title>
          {intro && (
            <Text c="dimmed" size="sm">
              {intro}
            </Text>
          )}
          {children}
        </Stack>
      </Paper>
    </Center>
  );
}

/** Back to the dashboard's front door (the login page when signed out): a full load, outside the router. */
export function SignInLink({ children = 'Go to sign in' }: { children?: ReactNode }) {
  return (
    <Anchor href="/dashboard/" size="sm">
      {children}
    </Anchor>
  );
}
