import '@mantine/core/styles.css';
import '@mantine/dates/styles.css';
import '@mantine/notifications/styles.css';
import '@mantine/charts/styles.css';
import { Center, Loader, MantineProvider, createTheme } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { CheckstandError } from './lib/api.ts';
import { ConfirmProvider } from './lib/confirm.tsx';
import { SessionProvider, SESSION_KEY } from './lib/session.tsx';
import { router } from './router.tsx';
import { LoginPage } from './shell/Login.tsx';

// Blue 7+ on white passes WCAG AA for text; the default primary shade 6 is used for fills only.
const theme = createTheme({ primaryColor: 'blue', primaryShade: { light: 7, dark: 5 }, defaultRadius: 'sm' });

const queryClient: QueryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 15_000,
      refetchOnWindowFocus: false,
      // A 4xx will not get better by asking again.
      retry: (count, err) => !(err instanceof CheckstandError && err.status < 500) && count < 2,
    },
  },
});
// A 401 anywhere (the session expired or was revoked): back to the login page.
queryClient.getQueryCache().subscribe((e) => {
  const err = e.type === 'updated' ? e.query.state.error : null;
  if (err instanceof CheckstandError && err.status === 401 && e.query.queryKey[0] !== SESSION_KEY[0]) queryClient.setQueryData(SESSION_KEY, null);
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="light">
      <Notifications position="top-right" />
      <QueryClientProvider client={queryClient}>
        <ConfirmProvider>
          <SessionProvider
            signedOut={<LoginPage />}
            loading={
              <Center mih="100vh">
                <Loader aria-label="Loading" />
              </Center>
            }
          >
            <RouterProvider router={router} />
          </SessionProvider>
        </ConfirmProvider>
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
