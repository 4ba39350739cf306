import { Alert, Badge, Button, Code, Group, Paper, SimpleGrid, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { useCan } from '../../lib/session.tsx';

type Preview = Schemas['MailPreview'];

/** The campaign's purchase-confirmation template: edit subject and body, preview them rendered with sample data, save or reset. */
export function PurchaseEmailEditor({ campaignId }: { campaignId: string }) {
  const qc = useQueryClient();
  const confirm = useConfirm();
  const canManage = useCan('catalog:manage');
  const key = ['purchase-email', campaignId];
  const template = useQuery({ queryKey: key, queryFn: async () => unwrap(await api.GET('/v1/campaigns/{id}/purchase-email', { params: { path: { id: campaignId } } })).data });
  const [subject, setSubject] = useState('');
  const [body, setBody] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  useEffect(() => {
    if (!template.data) return;
    setSubject(template.data.subject);
    setBody(template.data.body);
  }, [template.data]);

  const path = { params: { path: { id: campaignId } } };
  const previewIt = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/campaigns/{id}/purchase-email/preview', { ...path, body: { subject, body } })).data,
    onSuccess: setPreview,
  });
  const save = useMutation({
    mutationFn: async () => unwrap(await api.PUT('/v1/campaigns/{id}/purchase-email', { ...path, body: { subject, body } })).data,
    onSuccess: (t) => {
      qc.setQueryData(key, t);
      notifySuccess('Purchase e-mail saved');
    },
  });
  const reset = useMutation({
    mutationFn: async () => unwrap(await api.DELETE('/v1/campaigns/{id}/purchase-email', path)).data,
    onSuccess: (t) => {
      qc.setQueryData(key, t);
      setPreview(null);
      notifySuccess('Purchase e-mail reset to the default');
    },
    onError: (e) => notifyError(e),
  });

  if (template.error) return <ApiErrorAlert error={template.error} title="Could not load the template" />;
  if (!template.data) return <Text c="dimmed">Loading…</Text>;
  const t = template.data;
  const dirty = subject !== t.subject || body !== t.body;
  return (
    <Stack>
      <Group gap="xs">
        {t.is_default ? <Badge color="gray">Default template</Badge> : <Badge color="blue">Custom template</Badge>}
        {dirty && <Badge color="yellow">Unsaved changes</Badge>}
      </Group>
      {t.unknown_variables.length > 0 && (
        <Alert color="yellow" role="status">
          Unknown variables (rendered empty): {t.unknown_variables.join(', ')}
        </Alert>
      )}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Stack>
          <TextInput label="Subject" value={subject} onChange={(e) => setSubject(e.currentTarget.value)} readOnly={!canManage} maxLength={200} />
          <Textarea label="Body" description="Plain text with {{variables}}" value={body} onChange={(e) => setBody(e.currentTarget.value)} readOnly={!canManage} autosize minRows={8} maxRows={20} maxLength={20000} />
          <Group>
            <Button variant="light" onClick={() => previewIt.mutate()} loading={previewIt.isPending} disabled={!canManage || !subject || !body}>
              Preview
            </Button>
            {canManage && (
              <>
                <Button onClick={() => save.mutate()} loading={save.isPending} disabled={!dirty || !subject || !body}>
                  Save template
                </Button>
                <Button
                  variant="subtle"
                  color="red"
                  disabled={t.is_default}
                  onClick={async () => {
                    if (await confirm({ title: 'Reset the purchase e-mail?', message: 'The campaign goes back to the default template; the custom one is deleted.', confirmLabel: 'Reset', danger: true })) reset.mutate();
                  }}
                >
                  Reset to default
                </Button>
              </>
            )}
          </Group>
          <ApiErrorAlert error={save.error ?? previewIt.error} title="The template was refused" />
          <details>
            <summary>Variables</summary>
            <Stack gap={2} mt="xs">
              {t.variables.map((v) => (
                <Text size="sm" key={v.name}>
                  <Code>{`{{${v.name}}}`}</Code> {v.description}
                </Text>
              ))}
            </Stack>
          </details>
        </Stack>
        <Paper withBorder p="sm" aria-label="Preview" role="region">
          {preview ? (
            <Stack gap="xs">
              <Text size="sm">
                <b>Subject:</b> <span data-testid="preview-subject">{preview.subject}</span>
              </Text>
              {preview.unknown_variables.length > 0 && (
                <Text size="xs" c="orange">
                  Unknown variables: {preview.unknown_variables.join(', ')}
                </Text>
              )}
              {/* The rendered HTML in a sandbox: no scripts, no access to the dashboard. */}
              <iframe title="Purchase e-mail preview (HTML)" sandbox="" srcDoc={preview.html} style={{ width: '100%', minHeight: 320, border: '1px solid var(--mantine-color-gray-3)', background: 'white' }} />
              <details>
                <summary>Plain-text part</summary>
                <pre style={{ whiteSpace: 'pre-wrap', fontSize: 12 }}>{preview.text}</pre>
              </details>
            </Stack>
          ) : (
            <Text c="dimmed" size="sm">
              Preview renders the template with sample order data.
            </Text>
          )}
        </Paper>
      </SimpleGrid>
    </Stack>
  );
}
