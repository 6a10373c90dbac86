package convert

// CheckRefused is checkRefused for the external tests (package convert_test).
var CheckRefused = checkRefused
