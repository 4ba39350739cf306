import { Alert, Code, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconAlertTriangle } from '@tabler/icons-react';
import { CheckstandError } from './api.ts';

/** The API's error envelope `{ success: false, message, error: { code } }` as message + code (anything else as its message). */
export function describeError(err: unknown): { message: string; code: string | null; status: number | null; fields: { path: string; message: string }[] } {
  if (err instanceof CheckstandError) return { message: err.message, code: err.code, status: err.status, fields: err.fields };
  if (err instanceof Error) return { message: err.message, code: null, status: null, fields: [] };
  return { message: String(err), code: null, status: null, fields: [] };
}

/** An inline error: the API's message, its code and field errors. `role="alert"` so screen readers announce it. */
export function ApiErrorAlert({ error, title = 'Something went wrong' }: { error: unknown; title?: string }) {
  if (!error) return null;
  const e = describeError(error);
  return (
    <Alert color="red" title={title} icon={<IconAlertTriangle aria-hidden />} role="alert" data-testid="api-error">
      <Text size="sm">{e.message}</Text>
      {e.fields.length > 0 && (
        <ul style={{ margin: '4px 0 0', paddingLeft: 18 }}>
          {e.fields.map((f) => (
            <li key={f.path}>
              <Text size="sm">
                <Code>{f.path}</Code> {f.message}
              </Text>
            </li>
          ))}
        </ul>
      )}
      {e.code && (
        <Text size="xs" c="dimmed" mt={4}>
          {e.status ? `HTTP ${e.status} · ` : ''}
          <Code>{e.code}</Code>
        </Text>
      )}
    </Alert>
  );
}

/** A toast for a failed action (mutations' onError). */
export function notifyError(err: unknown, title = 'The action failed'): void {
  const e = describeError(err);
  notifications.show({ color: 'red', title, message: e.code ? `${e.message} (${e.code})` : e.message, autoClose: 8000 });
}

/** A toast for a done action. */
export function notifySuccess(message: string, title?: string): void {
  notifications.show({ color: 'green', title, message });
}
