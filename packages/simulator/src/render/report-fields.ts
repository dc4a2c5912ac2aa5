/**
 * Field values of report rows: one getter per catalog field id (`Group.Field`, the ids agreed with
 * the catalog), computed from a simulated transaction. Ids the simulator has no data for produce
 * an empty value, like an unpopulated column in a real report.
 */
import type { SimTransaction } from '../data/dataset.js';
import { paymentEvent, transactionTypeOf } from '../data/money-chain.js';
import type { FundingEvent } from '../data/money-chain.js';
import { formatMoney, formatScaled } from '../data/money.js';
import { hash32 } from '../data/prng.js';
import { isoUtc } from '../data/time.js';

export interface FieldContext {
  /** reportPreferences.signedAmounts: refunds and credits are written negative. */
  signedAmounts: boolean;
}

type Getter = (tx: SimTransaction, ctx: FieldContext) => string;

const money = (units: number, tx: SimTransaction): string => formatMoney(units, tx.currency);
const signed = (tx: SimTransaction, ctx: FieldContext): number =>
  ctx.signedAmounts && tx.settlementType === 'Refunds' ? -tx.amount : tx.amount;
const rate = (bp: number): string => formatScaled(bp, 2);
const fee = (tx: SimTransaction): NonNullable<SimTransaction['fee']> | undefined => tx.fee;
/** A funding or deposit line's event; a plain transaction stands for its payment event. */
const eventOf = (tx: SimTransaction): FundingEvent | undefined =>
  (tx as { event?: FundingEvent }).event ?? paymentEvent(tx);
const transactionType = (tx: SimTransaction): string =>
  (tx as { event?: FundingEvent }).event?.transactionType ?? transactionTypeOf(tx);

/** A card's expiry, derived from the request (month 1-12, a year 1-4 years after the request). */
const expiry = (tx: SimTransaction): { month: string; year: string } => {
  const h = hash32(tx.requestId);
  if (tx.paymentSubtype === 'EC') return { month: '', year: '' };
  return {
    month: String(1 + (h % 12)).padStart(2, '0'),
    year: String(Number(isoUtc(tx.time).slice(0, 4)) + 1 + ((h >>> 4) % 4)),
  };
};
const SOURCES = ['SCMP API', 'Simple Order API', 'Virtual Terminal'] as const;

/** The signed amount of a row in minor units, as the report writes it (for ground truth). */
export function rowAmount(tx: SimTransaction, ctx: FieldContext): number {
  return signed(tx, ctx);
}

const GETTERS: Record<string, Getter> = {
  'Request.RequestID': (tx) => tx.requestId,
  'Request.TransactionDate': (tx) => isoUtc(tx.time),
  'Request.MerchantID': (tx) => tx.organizationId,
  'Request.MerchantReferenceNumber': (tx) => tx.merchantReferenceNumber,
  'Request.TransactionReferenceNumber': (tx) => tx.transactionReferenceNumber,
  'Request.SubscriptionID': (tx) => tx.subscriptionId ?? '',
  'Request.Source': (tx) => SOURCES[hash32(tx.requestId) % SOURCES.length]!,
  'Request.User': () => '',
  'Request.PredecessorRequestID': (tx) => tx.predecessorRequestId ?? '',
  'PaymentData.Amount': (tx, ctx) => money(signed(tx, ctx), tx),
  'PaymentData.CurrencyCode': (tx) => tx.currency,
  'PaymentData.PaymentMethod': (tx) => tx.paymentMethod,
  'PaymentData.TransactionType': transactionType,
  'PaymentData.AuthorizationCode': (tx) => tx.authCode,
  'PaymentData.CardType': (tx) => tx.cardType,
  'PaymentData.AccountSuffix': (tx) => tx.accountSuffix,
  'PaymentData.PaymentRequestID': (tx) => tx.requestId,
  'PaymentData.PaymentProcessor': (tx) => (tx.paymentSubtype === 'EC' ? 'vantiv' : 'smartpay'),
  'PaymentData.TotalTaxAmount': (tx) => money(0, tx),
  'PaymentData.GrandTotal': (tx, ctx) => money(signed(tx, ctx), tx),
  'PaymentData.AuthorizationType': (tx) => (tx.authCode === '' ? '' : 'O'),
  'PaymentData.AVSResult': (tx) => tx.avsResult,
  'PaymentData.AVSResultMapped': (tx) => tx.avsResult,
  'PaymentData.CVResult': (tx) => tx.cvvResult,
  'PaymentMethod.AccountSuffix': (tx) => tx.accountSuffix,
  'PaymentMethod.CardType': (tx) => (tx.paymentSubtype === 'EC' ? '' : tx.paymentMethod),
  'PaymentMethod.ExpirationMonth': (tx) => expiry(tx).month,
  'PaymentMethod.ExpirationYear': (tx) => expiry(tx).year,
  'Application.Name': (tx) => tx.applications,
  'Application.Rcode': (tx) => tx.rcode,
  'Application.Rflag': (tx) => tx.rflag,
  'Application.Rmsg': (tx) => tx.rmsg,
  'Application.ReasonCode': (tx) => tx.reasonCode,
  'BillTo.FirstName': (tx) => tx.billTo.firstName,
  'BillTo.LastName': (tx) => tx.billTo.lastName,
  'BillTo.CompanyName': (tx) => tx.billTo.companyName,
  'BillTo.Address1': (tx) => tx.billTo.address1,
  'BillTo.City': (tx) => tx.billTo.city,
  'BillTo.State': (tx) => tx.billTo.state,
  'BillTo.Zip': (tx) => tx.billTo.zip,
  'BillTo.Country': (tx) => tx.billTo.country,
  'BillTo.Email': (tx) => tx.billTo.email,
  'BillTo.Phone': (tx) => tx.billTo.phone,
  'BillTo.IPAddress': (tx) => tx.billTo.ipAddress,
  'ShipTo.City': (tx) => tx.billTo.city,
  'ShipTo.Zip': (tx) => tx.billTo.zip,
  'BillTo.CustomerID': (tx) => `cust-${tx.billTo.email.split('@')[0] ?? ''}`,
  'AuthorizationResults.AVSResult': (tx) => tx.avsResult,
  'AuthorizationResults.CVVResult': (tx) => tx.cvvResult,
  'Batch.BatchID': (tx) => tx.batchId,
  'Batch.BatchDate': (tx) => (tx.batchTime ? isoUtc(tx.batchTime) : ''),
  'Batch.Status': (tx) => (tx.settled ? 'BATCHED' : ''),
  'Batch.SuccessFlag': (tx) => (tx.settled ? 'Y' : ''),
  'Merchant-DefinedDataFields.MerchantDefinedData_field1': (tx) => tx.merchantDefinedData[0],
  'Merchant-DefinedDataFields.MerchantDefinedData_field2': (tx) => tx.merchantDefinedData[1],
  'Merchant-DefinedDataFields.MerchantDefinedData_field3': (tx) => tx.merchantDefinedData[2],
  'Merchant-DefinedDataFields.MerchantDefinedData_field4': (tx) => tx.merchantDefinedData[3],
  'Merchant-DefinedDataFields.MerchantDefinedData_field5': () => '',
  'Device.DeviceID': (tx) => tx.deviceId,
  // Check (eCheck)
  'Check.SecCode': (tx) => (tx.paymentSubtype === 'EC' ? 'WEB' : ''),
  'Check.AccountEncoderID': (tx) => (tx.paymentSubtype === 'EC' ? '000' : ''),
  'Check.BankTransitNumber': (tx) =>
    tx.notificationOfChange?.routingNumber ?? (tx.paymentSubtype === 'EC' ? '121042882' : ''),
  // Funding: the line's funded event (a payment, or a chargeback)
  'Funding.FundingAmount': (tx) => money(eventOf(tx)?.net ?? 0, tx),
  'Funding.FundingCurrency': (tx) => tx.currency,
  'Funding.FeeAmount': (tx) => money(eventOf(tx)?.fee ?? 0, tx),
  'Funding.FeeCurrency': (tx) => tx.currency,
  // Written as a UTC timestamp, as the service writes this date (its day is the funding date).
  'Funding.FundingDate': (tx) => {
    const day = eventOf(tx)?.fundingDate;
    return day ? isoUtc(Date.parse(`${day}T00:00:00Z`)) : '';
  },
  'Funding.Status': (tx) => (eventOf(tx) ? 'S' : ''),
  'Funding.FundingIdentificationNumber': (tx) => eventOf(tx)?.fundingId ?? '',
  'Funding.FundingAccountSuffix': (tx) => String(tx.orgIndex + 1).padStart(4, '0'),
  'Funding.FundingBankCountry': () => 'USA',
  // Fee
  'Fee.DiscountAmount': (tx) => money(fee(tx)?.discountAmount ?? 0, tx),
  'Fee.DiscountCurrency': (tx) => tx.currency,
  'Fee.DiscountRate': (tx) => rate(fee(tx)?.discountRateBp ?? 0),
  'Fee.InterchangeAmount': (tx) => money(fee(tx)?.interchangeAmount ?? 0, tx),
  'Fee.InterchangeCurrency': (tx) => tx.currency,
  'Fee.InterchangeRate': (tx) => rate(fee(tx)?.interchangeRateBp ?? 0),
  'Fee.PerItemFeeAmount': (tx) => money(fee(tx)?.perItemFee ?? 0, tx),
  'Fee.PerItemFeeCurrency': (tx) => tx.currency,
  'Fee.TotalFeeAmount': (tx) => money(fee(tx)?.totalFee ?? 0, tx),
  'Fee.TotalFeeCurrency': (tx) => tx.currency,
  'Fee.SettlementAmount': (tx) => money(tx.amount, tx),
  'Fee.SettlementCurrency': (tx) => tx.currency,
  'Fee.SettlementTime': (tx) => (tx.batchTime ? isoUtc(tx.batchTime) : ''),
  'Fee.BillingType': () => 'discount',
  'Fee.ClearedInterchangeLevel': (tx) => fee(tx)?.interchangeDescription ?? '',
  'Fee.BillingCycle': () => 'daily',
  'Fee.ServiceFeeAmount': (tx) => money(fee(tx)?.perItemFee ?? 0, tx),
  'Fee.ServiceFeeAmountCcy': (tx) => tx.currency,
  'Fee.ServiceFeeRate': (tx) => rate(fee(tx)?.discountRateBp ?? 0),
  // Deposit: the deposit that pays the line's funded event
  'Deposit.Identifier': (tx) => eventOf(tx)?.depositId ?? '',
  'Deposit.Amount': (tx) => money(eventOf(tx)?.depositAmount ?? 0, tx),
  'Deposit.Currency': (tx) => tx.currency,
  'Deposit.Time': (tx) => {
    const e = eventOf(tx);
    return e ? isoUtc(e.depositTime) : '';
  },
  'Deposit.Status': () => 'S',
  'Deposit.Method': () => 'ACH',
  'Deposit.MerchantID': (tx) => tx.organizationId,
  'Deposit.MerchantBankAcctLast4': (tx) => String(tx.orgIndex + 1).padStart(4, '0'),
  'Deposit.MerchantBankCountry': () => 'US',
  // Event
  'Event.Event': (tx) => (tx.settlementType === 'Refunds' ? 'Refunded' : tx.settled ? 'Settled' : 'Declined'),
  'Event.EventDate': (tx) => (tx.batchTime ? isoUtc(tx.batchTime) : ''),
  'Event.Amount': (tx, ctx) => money(signed(tx, ctx), tx),
  'Event.CurrencyCode': (tx) => tx.currency,
  'Event.ProcessorMessage': (tx) => (tx.settled ? 'Accepted' : ''),
  // Exception
  'Exception.ExceptionDate': (tx) => isoUtc(tx.time),
  'Exception.ExceptionAmount': (tx) => money(tx.amount, tx),
  'Exception.ExceptionAmountCurrency': (tx) => tx.currency,
  'Exception.ExceptionCategory': () => 'Declined',
  'Exception.ExceptionReasonCode': (tx) => tx.reasonCode,
  'Exception.ExceptionReasonDescription': (tx) => tx.rmsg,
  'Exception.ExceptionMessage': (tx) => tx.rflag,
  'Exception.ExceptionStatus': () => 'Closed',
  'Exception.ReasonCode': (tx) => tx.reasonCode,
  // Chargeback and Retrieval
  'ChargebackAndRetrieval.CaseNumber': (tx) =>
    (tx as { event?: FundingEvent }).event?.caseNumber ?? tx.chargeback?.caseNumber ?? '',
  'ChargebackAndRetrieval.CaseTime': (tx) => (tx.chargeback ? isoUtc(tx.chargeback.time) : ''),
  'ChargebackAndRetrieval.CaseType': () => 'Chargeback',
  'ChargebackAndRetrieval.ChargebackAmount': (tx) => (tx.chargeback ? money(tx.chargeback.amount, tx) : ''),
  'ChargebackAndRetrieval.ChargebackCurrency': (tx) => tx.currency,
  'ChargebackAndRetrieval.ChargebackReasonCode': (tx) => tx.chargeback?.reasonCode ?? '',
  'ChargebackAndRetrieval.ChargebackTime': (tx) => (tx.chargeback ? isoUtc(tx.chargeback.time) : ''),
  'ChargebackAndRetrieval.FinancialImpact': () => 'Y',
  'ChargebackAndRetrieval.FinancialImpactType': () => 'debit',
  'ChargebackAndRetrieval.FeeAmount': (tx) => (tx.chargeback ? money(0, tx) : ''),
  'ChargebackAndRetrieval.FeeCurrency': (tx) => (tx.chargeback ? tx.currency : ''),
  'ChargebackAndRetrieval.RespondByDate': (tx) => tx.chargeback?.respondBy ?? '',
  'ChargebackAndRetrieval.ResolutionTime': (tx) =>
    tx.chargeback?.resolutionTime === undefined ? '' : isoUtc(tx.chargeback.resolutionTime),
  // Accepted at once: resolved to the merchant (who bears it).
  'ChargebackAndRetrieval.ResolvedToIndicato': (tx) =>
    tx.chargeback?.resolutionTime === undefined ? '' : 'M',
  // Conversion
  'Conversion.ConversionDate': (tx) => (tx.conversion ? isoUtc(tx.conversion.time) : ''),
  'Conversion.OriginalDecision': (tx) => tx.conversion?.originalDecision ?? '',
  'Conversion.NewDecision': (tx) => tx.conversion?.newDecision ?? '',
  'Conversion.Reviewer': (tx) => tx.conversion?.reviewer ?? '',
  'Conversion.ReviewerComments': (tx) => tx.conversion?.reviewerComments ?? '',
  'Conversion.Queue': (tx) => tx.conversion?.queue ?? '',
  'Conversion.Profile': (tx) => tx.conversion?.profile ?? '',
  // Invoice
  'Invoice.OrganizationID': (tx) => tx.organizationId,
  'Invoice.PerformedServices': (tx) => tx.applications,
  'Invoice.Processed': (tx) => (tx.rcode === '1' ? '1' : '0'),
  'Invoice.NotProcessed': (tx) => (tx.rcode === '1' ? '0' : '1'),
  // JP
  'JP.RequestID': (tx) => tx.requestId,
  'JP.MerchantID': (tx) => tx.organizationId,
  'JP.MerchantReferenceNumber': (tx) => tx.merchantReferenceNumber,
  'JP.TransactionReferenceNumber': (tx) => tx.transactionReferenceNumber,
  'JP.Amount': (tx) => money(tx.amount, tx),
  'JP.Currency': (tx) => tx.currency,
  'JP.Date': (tx) => isoUtc(tx.time).slice(0, 10),
  'JP.Time': (tx) => isoUtc(tx.time).slice(11, 19),
  'JP.PaymentMethod': (tx) => tx.paymentMethod,
  'JP.CardSuffix': (tx) => tx.accountSuffix,
  'JP.AuthorizationCode': (tx) => tx.authCode,
  'JP.CustomerFirstName': (tx) => tx.billTo.firstName,
  'JP.CustomerLastName': (tx) => tx.billTo.lastName,
  'JP.TransactionType': transactionType,
  'JP.JPOPaymentMethod': () => '1',
  // Line items (one line per order in the simulation)
  'LineItems.Number': () => '0',
  'LineItems.FulfillmentType': () => 'P',
  'LineItems.ProductName': (tx) => `Product ${tx.transactionReferenceNumber.slice(0, 3)}`,
  'LineItems.Quantity': () => '1',
  'LineItems.UnitPrice': (tx) => money(tx.amount, tx),
  'LineItems.TaxAmount': (tx) => money(0, tx),
  'LineItems.ProductCode': () => 'default',
  // Tokens
  'TMSToken.InstrumentIdentifierID': (tx) => (tx.subscriptionId ? `7010${tx.subscriptionId}` : ''),
  'TMSToken.InstrumentIdentifierState': (tx) => (tx.subscriptionId ? 'ACTIVE' : ''),
  'TMSToken.Creator': (tx) => tx.organizationId,
};

/** The getter of a field id; an unknown id yields an always-empty column. */
export function fieldGetter(id: string): Getter {
  return GETTERS[id] ?? (() => '');
}

export function knownFieldIds(): string[] {
  return Object.keys(GETTERS);
}
