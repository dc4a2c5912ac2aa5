/**
 * Request and response shapes of the Reporting API (facts §2). Responses are validated with
 * loose schemas: the fields the ETL relies on are checked, every other field is kept as sent.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// Closed sets
// ---------------------------------------------------------------------------------------------

export const SUBSCRIPTION_TYPES = ['CLASSIC', 'CUSTOM', 'STANDARD'] as const;
export type SubscriptionType = (typeof SUBSCRIPTION_TYPES)[number];

export const REPORT_MIME_TYPES = ['application/xml', 'text/csv'] as const;
export type ReportMimeType = (typeof REPORT_MIME_TYPES)[number];

export const TIME_QUERY_TYPES = ['reportTimeFrame', 'executedTime'] as const;
export type TimeQueryType = (typeof TIME_QUERY_TYPES)[number];

export const REPORT_STATUSES = ['COMPLETED', 'PENDING', 'QUEUED', 'RUNNING', 'ERROR', 'NO_DATA'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

/** Search filter values (SDK ReportsApi.searchReports: DAILY, WEEKLY, MONTHLY, USER_DEFINED, ADHOC). */
export const REPORT_FREQUENCIES = ['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED', 'ADHOC'] as const;
export type ReportFrequency = (typeof REPORT_FREQUENCIES)[number];

export const PAYMENT_SUBTYPES = ['ALL', 'VI', 'MC', 'AX', 'DI', 'DP'] as const;
export type PaymentSubtype = (typeof PAYMENT_SUBTYPES)[number];

export const VIEW_BY = ['requestDate', 'submissionDate'] as const;
export type ViewBy = (typeof VIEW_BY)[number];

export const ROLL_UPS = ['day', 'week', 'month'] as const;
export type RollUp = (typeof ROLL_UPS)[number];

export const BREAKDOWNS = ['account_rollup', 'all_merchant', 'selected_merchant'] as const;
export type Breakdown = (typeof BREAKDOWNS)[number];

/** On-demand endpoints that can also answer CSV or XML (facts §1). */
export const ON_DEMAND_REPORTS = {
  'conversion-details': '/reporting/v3/conversion-details',
  'notification-of-changes': '/reporting/v3/notification-of-changes',
  'purchase-refund-details': '/reporting/v3/purchase-refund-details',
  'net-fundings': '/reporting/v3/net-fundings',
  'payment-batch-summaries': '/reporting/v3/payment-batch-summaries',
} as const;
export type OnDemandReport = keyof typeof ON_DEMAND_REPORTS;

// ---------------------------------------------------------------------------------------------
// Request parameters
// ---------------------------------------------------------------------------------------------

/** A time parameter: an ISO-8601 string sent as given, or a Date (sent as ISO-8601 UTC). */
export type TimeParam = string | Date;

export interface OrganizationOptions {
  /** Partner acting for a merchant only; omitted otherwise (the credential names the organization). */
  organizationId?: string;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface ListReportDefinitionsParams extends OrganizationOptions {
  subscriptionType?: SubscriptionType;
}

export interface GetReportDefinitionParams extends OrganizationOptions {
  reportDefinitionName: string;
  subscriptionType?: SubscriptionType;
  reportMimeType?: ReportMimeType;
}

export interface ReportPreferences {
  signedAmounts?: boolean;
  fieldNameConvention?: 'SOAPI' | 'SCMP';
}

/** Body of PUT /reporting/v3/report-subscriptions (facts §2.4). */
export interface ReportSubscriptionRequest {
  organizationId?: string;
  reportDefinitionName: string;
  reportFields: string[];
  reportMimeType: ReportMimeType;
  reportFrequency: string;
  reportInterval?: string;
  reportName: string;
  timezone: string;
  /** Time of day, "hhmm". */
  startTime: string;
  startDay?: number;
  reportFilters?: Record<string, string[]>;
  reportPreferences?: ReportPreferences;
  groupName?: string;
  [extra: string]: unknown;
}

/** Body of POST /reporting/v3/reports, a one-time report (facts §2.6). */
export interface CreateReportRequest {
  organizationId?: string;
  reportDefinitionName: string;
  reportFields: string[];
  reportMimeType?: ReportMimeType;
  reportName: string;
  timezone?: string;
  reportStartTime: string;
  reportEndTime: string;
  reportFilters?: Record<string, string[]>;
  reportPreferences?: ReportPreferences;
  groupName?: string;
  [extra: string]: unknown;
}

export interface SearchReportsParams extends OrganizationOptions {
  startTime: TimeParam;
  endTime: TimeParam;
  timeQueryType: TimeQueryType;
  reportMimeType?: ReportMimeType;
  reportFrequency?: ReportFrequency;
  reportName?: string;
  reportDefinitionId?: number | string;
  reportStatus?: ReportStatus;
}

export interface DownloadReportParams extends OrganizationOptions {
  reportName: string;
  /** yyyy-MM-dd (for multi-day reports the end date, in the subscription's time zone), or a Date (its UTC date). */
  reportDate: string | Date;
  /** Accept header; `application/xml, text/csv` (either) by default. */
  accept?: ReportMimeType;
  /**
   * A search result's `_link.reportDownload.href`: when set, its query (reportDate, reportName,
   * reportTime …) is sent instead of reportDate/reportName; it must lead to the configured target.
   */
  href?: string;
}

export interface TimeRangeParams extends OrganizationOptions {
  startTime: TimeParam;
  endTime: TimeParam;
}

export interface PurchaseRefundDetailsParams extends TimeRangeParams {
  paymentSubtype?: PaymentSubtype;
  viewBy?: ViewBy;
  groupName?: string;
  offset?: number;
  limit?: number;
}

export interface NetFundingsParams extends TimeRangeParams {
  groupName?: string;
}

export interface PaymentBatchSummariesParams extends TimeRangeParams {
  rollUp?: RollUp;
  breakdown?: Breakdown;
  startDayOfWeek?: number;
}

/** Parameters of any on-demand report (the union of the endpoints' query parameters). */
export type OnDemandReportParams = PurchaseRefundDetailsParams & PaymentBatchSummariesParams;

// ---------------------------------------------------------------------------------------------
// Response schemas (loose: unknown fields are kept)
// ---------------------------------------------------------------------------------------------

const s = z.string();
const optS = z.string().nullish();
const optN = z.number().nullish();
const optB = z.boolean().nullish();
const filters = z.record(z.string(), z.array(z.string()).nullish()).nullish();
const preferences = z.looseObject({ signedAmounts: optB, fieldNameConvention: optS }).nullish();
/** Money and amounts are strings in this API; some servers send numbers, kept as text. */
const amount = z.union([z.string(), z.number().transform(String)]).nullish();

export const reportDefinitionSchema = z.looseObject({
  type: optS,
  reportDefinitionId: z.union([z.number(), z.string()]).nullish(),
  /** Sic: the API misspells this key. */
  reportDefintionName: optS,
  supportedFormats: z.array(z.string()).nullish(),
  description: optS,
  defaultSettings: z
    .looseObject({
      reportMimeType: optS,
      reportFrequency: optS,
      reportName: optS,
      timezone: optS,
      startTime: optS,
      startDay: optN,
      reportFilters: filters,
      reportPreferences: preferences,
    })
    .nullish(),
  subscriptionType: optS,
});
export type ReportDefinition = z.infer<typeof reportDefinitionSchema>;

export const reportDefinitionsResponseSchema = z.looseObject({
  reportDefinitions: z.array(reportDefinitionSchema).default([]),
});
export type ReportDefinitionsResponse = z.infer<typeof reportDefinitionsResponseSchema>;

export const reportDefinitionDetailSchema = reportDefinitionSchema.extend({
  attributes: z
    .array(
      z.looseObject({
        id: optS,
        name: optS,
        description: optS,
        filterType: optS,
        default: optB,
        required: optB,
        supportedType: z.union([z.string(), z.array(z.string())]).nullish(),
      }),
    )
    .default([]),
});
export type ReportDefinitionDetail = z.infer<typeof reportDefinitionDetailSchema>;

export const reportSubscriptionSchema = z.looseObject({
  organizationId: optS,
  reportDefinitionId: z.union([z.string(), z.number()]).nullish(),
  reportDefinitionName: optS,
  reportMimeType: optS,
  reportFrequency: optS,
  reportInterval: optS,
  reportName: s,
  timezone: optS,
  startTime: optS,
  startDay: optN,
  reportFields: z.array(z.string()).nullish(),
  reportFilters: filters,
  reportPreferences: preferences,
  groupId: optS,
});
export type ReportSubscription = z.infer<typeof reportSubscriptionSchema>;

export const reportSubscriptionsResponseSchema = z.looseObject({
  subscriptions: z.array(reportSubscriptionSchema).default([]),
});
export type ReportSubscriptionsResponse = z.infer<typeof reportSubscriptionsResponseSchema>;

export const reportSearchResultSchema = z.looseObject({
  _link: z
    .looseObject({
      reportDownload: z.looseObject({ href: optS, method: optS }).nullish(),
    })
    .nullish(),
  reportDefinitionId: z.union([z.string(), z.number()]).nullish(),
  reportName: s,
  reportMimeType: optS,
  reportFrequency: optS,
  status: optS,
  reportStartTime: optS,
  reportEndTime: optS,
  timezone: optS,
  reportId: s,
  organizationId: optS,
  queuedTime: optS,
  reportGeneratingTime: optS,
  reportCompletedTime: optS,
  subscriptionType: optS,
  groupId: optS,
});
export type ReportSearchResult = z.infer<typeof reportSearchResultSchema>;

export const reportSearchResponseSchema = z.looseObject({
  reportSearchResults: z.array(reportSearchResultSchema).default([]),
});
export type ReportSearchResponse = z.infer<typeof reportSearchResponseSchema>;

export const reportDetailSchema = z.looseObject({
  organizationId: optS,
  reportId: s,
  reportDefinitionId: z.union([z.string(), z.number()]).nullish(),
  reportName: optS,
  reportMimeType: optS,
  reportFrequency: optS,
  reportFields: z.array(z.string()).nullish(),
  reportStatus: optS,
  reportStartTime: optS,
  reportEndTime: optS,
  timezone: optS,
  reportFilters: filters,
  reportPreferences: preferences,
  groupId: optS,
});
export type ReportDetail = z.infer<typeof reportDetailSchema>;

export const conversionDetailsResponseSchema = z.looseObject({
  organizationId: optS,
  startTime: optS,
  endTime: optS,
  conversionDetails: z
    .array(
      z.looseObject({
        merchantReferenceNumber: optS,
        conversionTime: optS,
        requestId: optS,
        originalDecision: optS,
        newDecision: optS,
        reviewer: optS,
        reviewerComments: optS,
        queue: optS,
        profile: optS,
        notes: z.array(z.looseObject({ time: optS, addedBy: optS, comments: optS })).nullish(),
      }),
    )
    .default([]),
});
export type ConversionDetailsResponse = z.infer<typeof conversionDetailsResponseSchema>;

export const notificationOfChangesResponseSchema = z.looseObject({
  notificationOfChanges: z
    .array(
      z.looseObject({
        merchantReferenceNumber: optS,
        transactionReferenceNumber: optS,
        time: optS,
        code: optS,
        accountType: optS,
        routingNumber: optS,
        accountNumber: optS,
        consumerName: optS,
      }),
    )
    .default([]),
});
export type NotificationOfChangesResponse = z.infer<typeof notificationOfChangesResponseSchema>;

const withRequestId = <T extends z.core.$ZodLooseShape>(shape: T) =>
  z.looseObject({ requestId: optS, ...shape });

export const purchaseRefundDetailsResponseSchema = z.looseObject({
  offset: optN,
  limit: optN,
  pageResults: optN,
  requestDetails: z
    .array(
      withRequestId({
        cybersourceMerchantId: optS,
        processorMerchantId: optS,
        groupName: optS,
        transactionReferenceNumber: optS,
        merchantReferenceNumber: optS,
      }),
    )
    .default([]),
  settlements: z
    .array(
      withRequestId({
        transactionType: optS,
        submissionTime: optS,
        amount,
        currencyCode: optS,
        paymentMethod: optS,
        walletType: optS,
        paymentType: optS,
        accountSuffix: optS,
        cybersourceBatchTime: optS,
        cybersourceBatchId: optS,
        cardType: optS,
        debitNetwork: optS,
      }),
    )
    .default([]),
  authorizations: z
    .array(
      withRequestId({
        transactionReferenceNumber: optS,
        time: optS,
        authorizationRequestId: optS,
        amount,
        currencyCode: optS,
        code: optS,
        rcode: optS,
      }),
    )
    .default([]),
  feeAndFundingDetails: z
    .array(
      withRequestId({
        interchangePerItemFee: amount,
        interchangeDescription: optS,
        interchangePercentage: amount,
        interchangePercentageAmount: amount,
        discountPercentage: amount,
        discountAmount: amount,
        discountPerItemFee: amount,
        totalFee: amount,
        feeCurrency: optS,
        duesAssessments: amount,
        fundingAmount: amount,
        fundingCurrency: optS,
      }),
    )
    .default([]),
  others: z
    .array(
      withRequestId({
        merchantData1: optS,
        merchantData2: optS,
        merchantData3: optS,
        merchantData4: optS,
        firstName: optS,
        lastName: optS,
      }),
    )
    .default([]),
  settlementStatuses: z
    .array(withRequestId({ status: optS, settlementTime: optS, reasonCode: optS, errorText: optS }))
    .default([]),
});
export type PurchaseRefundDetailsResponse = z.infer<typeof purchaseRefundDetailsResponseSchema>;

const currencyTotals = z.array(z.looseObject({ currency: optS, value: amount })).default([]);

export const netFundingsResponseSchema = z.looseObject({
  startTime: optS,
  endTime: optS,
  netFundingSummaries: z
    .array(
      z.looseObject({
        type: optS,
        paymentSubType: optS,
        conveyedCount: optN,
        conveyedAmount: amount,
        settledCount: optN,
        fundedCount: optN,
        fundedAmount: amount,
        currencyCode: optS,
      }),
    )
    .default([]),
  totalPurchases: currencyTotals,
  totalRefunds: currencyTotals,
  totalFees: currencyTotals,
  totalChargebacks: currencyTotals,
  netTotal: currencyTotals,
});
export type NetFundingsResponse = z.infer<typeof netFundingsResponseSchema>;

export const paymentBatchSummariesResponseSchema = z.looseObject({
  startTime: optS,
  endTime: optS,
  paymentBatchSummaries: z
    .array(
      z.looseObject({
        currencyCode: optS,
        paymentSubTypeDescription: optS,
        startTime: optS,
        endTime: optS,
        salesCount: optN,
        salesAmount: amount,
        creditCount: optN,
        creditAmount: amount,
        accountName: optS,
        accountId: optS,
        merchantId: optS,
        merchantName: optS,
      }),
    )
    .default([]),
});
export type PaymentBatchSummariesResponse = z.infer<typeof paymentBatchSummariesResponseSchema>;
