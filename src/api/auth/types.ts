/** What an authenticator signs: exactly the request that goes on the wire. */
export interface SignableRequest {
  /** Upper-case HTTP method (GET, POST, PUT, PATCH, DELETE). */
  method: string;
  /** Host header value (hostname plus a non-default port). */
  host: string;
  /** Path and query string exactly as sent, e.g. `/reporting/v3/reports?startTime=…`. */
  target: string;
  /** The request body exactly as sent (UTF-8), for POST/PUT/PATCH. */
  body?: string;
  /**
   * The merchant a meta key acts for in this request (`v-c-merchant-id`), when it is not the
   * credentials' merchant; only a meta key (portfolio) may set it.
   */
  merchantId?: string;
}

/** Methods whose body is digested and signed (facts §4.1, §4.2). */
export const BODY_METHODS = ['POST', 'PUT', 'PATCH'] as const;

export function hasSignedBody(method: string): boolean {
  return (BODY_METHODS as readonly string[]).includes(method.toUpperCase());
}

/** Signs one request attempt; called again for every retry so that date and jti are fresh. */
export interface Authenticator {
  readonly scheme: 'http-signature' | 'jwt' | 'jwt-p12';
  /** Transacting merchant id (for messages; never a secret). */
  readonly merchantId: string;
  /** The portfolio of a meta key, which may act for any of its merchants (SignableRequest.merchantId). */
  readonly portfolioId?: string;
  /** The headers to add to the request (authorization or signature, date, digest, …). */
  headersFor(request: SignableRequest): Promise<Record<string, string>>;
}
