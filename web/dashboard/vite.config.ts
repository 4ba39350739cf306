import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `npm run dev -w web/dashboard`: Vite on :5173, the API proxied to CHECKSTAND_API_URL (default
// http://127.0.0.1:3000, where `npm start` listens). The build is served by checkstand at /dashboard.
const api = process.env.CHECKSTAND_API_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  base: '/dashboard/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1500 },
  server: {
    port: 5173,
    proxy: { '/v1': api, '/checkout': api },
  },
});
