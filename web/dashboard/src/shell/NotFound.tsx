import { Alert, Code, Stack, Title } from '@mantine/core';
import { Link } from '@tanstack/react-router';

export function NotFound() {
  return (
    <Stack>
      <Title order={1} size="h3">
        Page not found
      </Title>
      <Link to="/">Back to the dashboard</Link>
    </Stack>
  );
}

export function NoAccess({ permission }: { permission: string }) {
  return (
    <Alert color="yellow" title="No access" role="alert">
      Your role on this team does not include <Code>{permission}</Code>. Ask a team admin.
    </Alert>
  );
}
