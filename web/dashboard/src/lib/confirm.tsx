import { Button, Group, Modal, Stack, Text } from '@mantine/core';
import { createContext, type ReactNode, useCallback, useContext, useRef, useState } from 'react';

export interface ConfirmOptions {
  title: string;
  /** What will happen, in words ("Refund $12.00 of ord_… to the card ending 4242"). */
  message: ReactNode;
  confirmLabel?: string;
  cancelLabel?: string;
  /** Red confirm button (money moves, things are deleted). */
  danger?: boolean;
}

type Ask = (o: ConfirmOptions) => Promise<boolean>;
const ConfirmContext = createContext<Ask | null>(null);

/**
 * `const confirm = useConfirm(); if (await confirm({ title: 'Void order?', message: …, danger: true })) …`
 * One modal for the app (focus trapped, Escape cancels, the confirm button is not focused first).
 */
export function useConfirm(): Ask {
  const ask = useContext(ConfirmContext);
  if (!ask) throw new Error('useConfirm outside <ConfirmProvider>');
  return ask;
}

export function ConfirmProvider({ children }: { children: ReactNode }) {
  const [open, setOpen] = useState<ConfirmOptions | null>(null);
  const resolver = useRef<((v: boolean) => void) | null>(null);
  const ask = useCallback<Ask>(
    (o) =>
      new Promise<boolean>((resolve) => {
        resolver.current?.(false);
        resolver.current = resolve;
        setOpen(o);
      }),
    [],
  );
  const answer = (v: boolean) => {
    resolver.current?.(v);
    resolver.current = null;
    setOpen(null);
  };
  return (
    <ConfirmContext.Provider value={ask}>
      {children}
      <Modal opened={!!open} onClose={() => answer(false)} title={open?.title} centered>
        <Stack>
          {typeof open?.message === 'string' ? <Text>{open.message}</Text> : open?.message}
          <Group justify="flex-end">
            <Button variant="default" onClick={() => answer(false)} data-autofocus>
              {open?.cancelLabel ?? 'Cancel'}
            </Button>
            <Button color={open?.danger ? 'red' : undefined} onClick={() => answer(true)}>
              {open?.confirmLabel ?? 'Confirm'}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </ConfirmContext.Provider>
  );
}
