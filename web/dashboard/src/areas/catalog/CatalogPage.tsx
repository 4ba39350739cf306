import { Stack, Tabs, Title } from '@mantine/core';
import { useNavigate, useParams } from '@tanstack/react-router';
import { CampaignsTab } from './Campaigns.tsx';
import { CouponsTab } from './Coupons.tsx';
import { OffersTab } from './Offers.tsx';
import { ProductsTab } from './Products.tsx';
import { UpsellsTab } from './Upsells.tsx';

const TABS = [
  ['campaigns', 'Campaigns'],
  ['products', 'Products'],
  ['offers', 'Offers'],
  ['upsells', 'Upsells'],
  ['coupons', 'Coupons'],
] as const;
type Tab = (typeof TABS)[number][0];

/** Catalog: campaigns, products, offers, upsells (funnel steps) and coupons, each a tab with its list and forms. */
export function CatalogPage() {
  const params = useParams({ strict: false });
  const navigate = useNavigate();
  const tab: Tab = TABS.some(([k]) => k === params.tab) ? (params.tab as Tab) : 'campaigns';
  return (
    <Stack>
      <Title order={1} size="h2">
        Catalog
      </Title>
      <Tabs value={tab} onChange={(v) => void navigate({ to: `/catalog/${v ?? 'campaigns'}` })} keepMounted={false}>
        <Tabs.List aria-label="Catalog">
          {TABS.map(([k, label]) => (
            <Tabs.Tab key={k} value={k}>
              {label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
      </Tabs>
      {tab === 'campaigns' && <CampaignsTab />}
      {tab === 'products' && <ProductsTab />}
      {tab === 'offers' && <OffersTab />}
      {tab === 'upsells' && <UpsellsTab />}
      {tab === 'coupons' && <CouponsTab />}
    </Stack>
  );
}
