import { describe, expect, it } from 'vitest';
import { headerKey, scmpName, snakeCase, soapiName } from '../../src/catalog/naming.js';

describe('field naming rules', () => {
  it('reproduces the documented Gift Card names', () => {
    expect(soapiName('GiftCard.CurrentBalance')).toBe('giftCard_currentBalance');
    expect(scmpName('GiftCard.CurrentBalance')).toBe('gift_card_current_balance');
    expect(scmpName('GiftCard.RedemptionType')).toBe('gift_card_redemption_type');
  });

  it('keeps acronyms together in snake_case', () => {
    expect(snakeCase('RequestID')).toBe('request_id');
    expect(snakeCase('AVSResult')).toBe('avs_result');
    expect(snakeCase('LCMEventType')).toBe('lcm_event_type');
    expect(snakeCase('MerchantDefinedData_field1')).toBe('merchant_defined_data_field1');
    expect(snakeCase('Merchant-DefinedDataFields')).toBe('merchant_defined_data_fields');
    expect(snakeCase('JPOInstallmentMethod')).toBe('jpo_installment_method');
  });

  it('normalises headers for lookup', () => {
    expect(headerKey('\uFEFFBillTo.FirstName ')).toBe(headerKey('billto_firstname'));
  });
});
