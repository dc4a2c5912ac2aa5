import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { CybsError } from '../../errors.js';

/** The signing key of a CyberSource PKCS#12 key file. */
export interface P12SigningKey {
  privateKey: KeyObject;
  /** The serialNumber attribute of the chosen certificate's subject: the JWT header `kid`. */
  kid: string;
  /** friendlyName of the chosen certificate (for messages). */
  friendlyName?: string;
}

const CERT_BAG = forge.pki.oids.certBag as string;
const KEY_BAG = forge.pki.oids.keyBag as string;
const SHROUDED_KEY_BAG = forge.pki.oids.pkcs8ShroudedKeyBag as string;

function p12Error(message: string, cause?: unknown): CybsError {
  return new CybsError('API_P12_INVALID', message, { stage: 'api', exitCode: 2, cause });
}

/**
 * Read the private key and the certificate for `keyAlias` from a PKCS#12 file (pure, no I/O).
 * The certificate is the one whose friendlyName contains `CN=<keyAlias>` (case-insensitive), as
 * the SDKs choose it; when no friendlyName matches and the file holds a single certificate, that
 * one is used.
 */
export function readP12SigningKey(p12: Uint8Array, password: string, keyAlias: string): P12SigningKey {
  let store: forge.pkcs12.Pkcs12Pfx;
  try {
    const asn1 = forge.asn1.fromDer(forge.util.createBuffer(Buffer.from(p12).toString('binary')));
    store = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  } catch (error) {
    throw p12Error(
      'the PKCS#12 key file cannot be opened: it is not a PKCS#12 file or CYBS_P12_PASSWORD is wrong.',
      error,
    );
  }
  const certBags = store.getBags({ bagType: CERT_BAG })[CERT_BAG] ?? [];
  const wanted = `cn=${keyAlias.toLowerCase()}`;
  let chosen = certBags.find((bag) =>
    (bag.attributes?.friendlyName as string[] | undefined)?.some((name) =>
      name.toLowerCase().includes(wanted),
    ),
  );
  if (!chosen && certBags.length === 1) chosen = certBags[0];
  if (!chosen?.cert) {
    throw p12Error(
      `the PKCS#12 key file has no certificate for the key alias "${keyAlias}" (friendlyName with CN=${keyAlias}); set CYBS_KEY_ALIAS.`,
    );
  }
  const serial = chosen.cert.subject.attributes.find((attr) => attr.name === 'serialNumber');
  if (typeof serial?.value !== 'string' || serial.value === '') {
    throw p12Error(
      `the certificate for "${keyAlias}" in the PKCS#12 key file has no serialNumber in its subject, which the JWT key id needs.`,
    );
  }
  const keyBag =
    store.getBags({ bagType: KEY_BAG })[KEY_BAG]?.[0] ??
    store.getBags({ bagType: SHROUDED_KEY_BAG })[SHROUDED_KEY_BAG]?.[0];
  if (!keyBag?.key) throw p12Error('the PKCS#12 key file holds no private key.');
  const privateKey = createPrivateKey(forge.pki.privateKeyToPem(keyBag.key));
  const friendlyName = (chosen.attributes?.friendlyName as string[] | undefined)?.[0];
  return friendlyName === undefined
    ? { privateKey, kid: serial.value }
    : { privateKey, kid: serial.value, friendlyName };
}
