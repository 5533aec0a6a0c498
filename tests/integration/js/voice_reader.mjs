// A second device of a person, on matrix-js-sdk with its Rust crypto: it signs in, prints "READER ready" once
// it has synced and published its keys, then waits for the first m.audio message `sender` sends to `roomId`,
// decrypts it, and prints what the SDK reads from it as "READER <json>" (the crypto's own log lines share
// stdout, so each of ours carries the mark).
import * as sdk from "matrix-js-sdk";
import { logger } from "matrix-js-sdk/lib/logger.js";

const [baseUrl, userId, password, roomId, sender] = process.argv.slice(2);
logger.setLevel("silent");

const login = await sdk.createClient({ baseUrl }).loginRequest({
  type: "m.login.password",
  identifier: { type: "m.id.user", user: userId },
  password,
  initial_device_display_name: "js-sdk reader",
});
const client = sdk.createClient({
  baseUrl,
  userId: login.user_id,
  accessToken: login.access_token,
  deviceId: login.device_id,
});
await client.initRustCrypto({ useIndexedDB: false });

function report(event) {
  const content = event.getContent();
  console.log(
    "READER " +
    JSON.stringify({
      encrypted: event.isEncrypted(),
      decryptionFailed: event.isDecryptionFailure(),
      type: event.getType(),
      msgtype: content.msgtype,
      isAudio: content.msgtype === sdk.MsgType.Audio,
      voice: content["org.matrix.msc3245.voice"] ?? null,
      audio: content["org.matrix.msc1767.audio"] ?? null,
      info: content.info ?? null,
      file: content.file ?? null,
      threadRoot: event.threadRootId ?? null,
    }),
  );
  process.exit(0);
}

function consider(event) {
  if (event.getRoomId() !== roomId || event.getSender() !== sender) return;
  if (event.isBeingDecrypted() || event.getType() !== "m.room.message") return;
  if (event.getContent().msgtype === sdk.MsgType.Audio) report(event);
}

client.on(sdk.MatrixEventEvent.Decrypted, consider);
client.on(sdk.RoomEvent.Timeline, consider);
client.on(sdk.ClientEvent.Sync, (state) => {
  if (state === "PREPARED") console.log("READER ready");
});
await client.startClient({ initialSyncLimit: 1 });
setTimeout(() => {
  console.error("no voice message arrived");
  process.exit(2);
}, 90_000);
