package app

// EncodeReplay and DecodeReplay expose the cached-answer format to the tests.
var (
	EncodeReplay = encodeReplay
	DecodeReplay = decodeReplay
)
