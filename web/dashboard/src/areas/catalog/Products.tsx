import { Button, Group, Modal, Stack, Table, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan } from '../../lib/session.tsx';
import { PAGE_SIZE, type Product } from './catalogApi.ts';

export function ProductsTab() {
  const canManage = useCan('catalog:manage');
  const [editing, setEditing] = useState<Product | 'new' | null>(null);
  const list = usePaginatedList<Product>({
    key: ['products', 'list'],
    fetchPage: async (after) => unwrap(await api.GET('/v1/products', { params: { query: { limit: PAGE_SIZE, ...(after ? { starting_after: after } : {}) } } })),
    idOf: (p) => p.id,
  });
  return (
    <Stack>
      {canManage && (
        <Button w="fit-content" onClick={() => setEditing('new')}>
          New product
        </Button>
      )}
      <ApiErrorAlert error={list.error} title="Could not load products" />
      <Table striped highlightOnHover aria-label="Products" aria-busy={list.isLoading}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">SKU</Table.Th>
            <Table.Th scope="col">Description</Table.Th>
            {canManage && <Table.Th scope="col">Actions</Table.Th>}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((p) => (
            <Table.Tr key={p.id} data-product={p.id}>
              <Table.Td>
                {p.name}
                <Text size="xs" c="dimmed" ff="monospace">
                  {p.id}
                </Text>
              </Table.Td>
              <Table.Td ff="monospace">{p.sku ?? '—'}</Table.Td>
              <Table.Td>
                <Text size="sm" lineClamp={2}>
                  {p.description ?? '—'}
                </Text>
              </Table.Td>
              {canManage && (
                <Table.Td>
                  <Button size="xs" variant="default" onClick={() => setEditing(p)} aria-label={`Edit product ${p.name}`}>
                    Edit
                  </Button>
                </Table.Td>
              )}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {!list.isLoading && list.items.length === 0 && <Text c="dimmed">No products yet.</Text>}
      <Pager list={list as never} label="Product pages" />
      <ProductForm product={editing} onClose={() => setEditing(null)} />
    </Stack>
  );
}

function ProductForm({ product, onClose }: { product: Product | 'new' | null; onClose: () => void }) {
  const qc = useQueryClient();
  const isNew = product === 'new';
  const [name, setName] = useState('');
  const [sku, setSku] = useState('');
  const [description, setDescription] = useState('');
  useEffect(() => {
    if (!product) return;
    const p = product === 'new' ? null : product;
    setName(p?.name ?? '');
    setSku(p?.sku ?? '');
    setDescription(p?.description ?? '');
  }, [product]);
  const save = useMutation({
    mutationFn: async () => {
      const body = { name, sku: sku.trim() || null, description: description.trim() || null };
      if (product === 'new') return unwrap(await api.POST('/v1/products', { body })).data;
      return unwrap(await api.PATCH('/v1/products/{id}', { params: { path: { id: (product as Product).id } }, body })).data;
    },
    onSuccess: async (p) => {
      notifySuccess(isNew ? `Product ${p.name} created` : `Product ${p.name} saved`);
      await qc.invalidateQueries({ queryKey: ['products'] });
      onClose();
    },
  });
  useEffect(() => save.reset(), [product]);
  function submit(e: FormEvent) {
    e.preventDefault();
    save.mutate();
  }
  return (
    <Modal opened={!!product} onClose={onClose} title={isNew ? 'New product' : 'Edit product'}>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} maxLength={200} />
          <TextInput label="SKU" description="Optional; unique within the team" value={sku} onChange={(e) => setSku(e.currentTarget.value)} maxLength={100} />
          <Textarea label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} autosize minRows={2} maxLength={5000} />
          <ApiErrorAlert error={save.error} title="Not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {isNew ? 'Create product' : 'Save'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
