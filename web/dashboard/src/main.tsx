import '@mantine/core/styles.css';
import '@mantine/dates/styles.css';
import '@mantine/notifications/styles.css';
import '@mantine/charts/styles.css';
import { type CSSVariablesResolver, Center, Loader, MantineProvider, createTheme, darken } from '@mantine/core';
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

// WCAG AA text contrast, checked by axe (test/e2e/dashboard-a11y.e2e.test.ts): shade 8 of blue (and of
// red, for outline buttons) passes 4.5:1 on white and on striped rows, 7 did not (4.19); dimmed text is
// gray 7 (gray 6 gave 3.3:1), and a light badge's text a darker shade 9 (green 9 gave 3.8:1 on its tint).
const theme = createTheme({ primaryColor: 'blue', primaryShade: { light: 8, dark: 5 }, defaultRadius: 'sm' });
const contrast: CSSVariablesResolver = (t) => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': t.colors.gray[7],
    ...Object.fromEntries(Object.entries(t.colors).map(([name, shades]) => [`--mantine-color-${name}-light-color`, darken(shades[9], 0.3)])),
  },
  dark: {},
});

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
    <MantineProvider theme={theme} defaultColorScheme="light" cssVariablesResolver={contrast}>
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
