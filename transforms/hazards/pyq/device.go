package pyq

import "github.com/pallasify/pallasify/transforms/rule"

// DeviceName is the module-level name of the portable device value.
const DeviceName = "DEVICE"

// DevicePrelude is the portable device definition (torchtpu.md §4 DEV),
// inserted once after a module's imports by fixes that refer to DeviceName.
// Its Key and Marker match the device family's prelude, so the engine inserts
// a single definition whichever family asks first.
func DevicePrelude() rule.Prelude {
	return rule.Prelude{
		Key:     "device",
		Text:    "DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\n",
		Marker:  "DEVICE = ",
		Imports: []string{"import torch"},
	}
}
