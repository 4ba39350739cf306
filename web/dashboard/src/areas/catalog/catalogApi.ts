import { useQuery } from '@tanstack/react-query';
import { api, type Schemas, unwrap } from '../../lib/api.ts';

export type Campaign = Schemas['Campaign'];
export type Product = Schemas['Product'];
export type Offer = Schemas['Offer'];
export type Upsell = Schemas['Upsell'];
export type Coupon = Schemas['Coupon'];

export const PAGE_SIZE = 50;

/** Every campaign of the team (for pickers and names; the API pages by 100). */
export function useAllCampaigns() {
  return useQuery({
    queryKey: ['campaigns', 'all'],
    staleTime: 60_000,
    queryFn: async () => {
      const all: Campaign[] = [];
      let after: string | undefined;
      for (;;) {
        const page = unwrap(await api.GET('/v1/campaigns', { params: { query: { limit: 100, ...(after ? { starting_after: after } : {}) } } }));
        all.push(...page.data);
        if (!page.has_more || page.data.length === 0) return all;
        after = page.data[page.data.length - 1]!.id;
      }
    },
  });
}

/** Every product of the team (for the offer form's picker and names). */
export function useAllProducts() {
  return useQuery({
    queryKey: ['products', 'all'],
    staleTime: 60_000,
    queryFn: async () => {
      const all: Product[] = [];
      let after: string | undefined;
      for (;;) {
        const page = unwrap(await api.GET('/v1/products', { params: { query: { limit: 100, ...(after ? { starting_after: after } : {}) } } }));
        all.push(...page.data);
        if (!page.has_more || page.data.length === 0) return all;
        after = page.data[page.data.length - 1]!.id;
      }
    },
  });
}

/** Every offer (or upsell) of one campaign. */
export function useCampaignOffers(campaignId: string | null) {
  return useQuery({
    queryKey: ['offers', 'campaign', campaignId],
    enabled: !!campaignId,
    queryFn: async () => unwrap(await api.GET('/v1/offers', { params: { query: { limit: 100, campaign_id: campaignId! } } })).data,
  });
}

export function useCampaignUpsells(campaignId: string | null) {
  return useQuery({
    queryKey: ['upsells', 'campaign', campaignId],
    enabled: !!campaignId,
    queryFn: async () => unwrap(await api.GET('/v1/upsells', { params: { query: { limit: 100, campaign_id: campaignId! } } })).data.sort((a, b) => a.step - b.step),
  });
}

/** The campaign picker's options (NativeSelect data). */
export function campaignOptions(campaigns: Campaign[] | undefined, empty?: string): { value: string; label: string }[] {
  const opts = (campaigns ?? []).map((c) => ({ value: c.id, label: `${c.name} (${c.currency})` }));
  return empty !== undefined ? [{ value: '', label: empty }, ...opts] : opts;
}

/** Keys every catalog mutation invalidates. */
export const CATALOG_KEYS = ['campaigns', 'products', 'offers', 'upsells', 'coupons', 'purchase-email'] as const;
