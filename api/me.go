package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func toProfile(p *store.Profile) gen.Profile {
	out := gen.Profile{FirstName: p.FirstName, LastName: p.LastName, Locale: p.Locale, Timezone: p.Timezone, Bio: p.Bio}
	if !p.UpdatedAt.IsZero() {
		t := p.UpdatedAt
		out.UpdatedAt = &t
	}
	return out
}

func toLocation(l *store.Location) gen.Location {
	return gen.Location{Id: l.ID, Name: l.Name, Address: l.Address, Latitude: l.Latitude, Longitude: l.Longitude,
		IsDefault: l.IsDefault, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
}

func fromLocationInput(b *gen.LocationInput) store.Location {
	return store.Location{Name: b.Name, Address: deref(b.Address), Latitude: b.Latitude, Longitude: b.Longitude, IsDefault: deref(b.IsDefault)}
}

// GetProfile reads the caller's profile.
func (a *API) GetProfile(ctx context.Context, _ gen.GetProfileRequestObject) (gen.GetProfileResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := a.users.Profile(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.GetProfile200JSONResponse
	r.Data.Profile = toProfile(p)
	return r, nil
}

// ReplaceProfile stores the caller's profile.
func (a *API) ReplaceProfile(ctx context.Context, req gen.ReplaceProfileRequestObject) (gen.ReplaceProfileResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	p, err := a.users.PutProfile(ctx, id.User, store.Profile{FirstName: deref(b.FirstName), LastName: deref(b.LastName),
		Locale: deref(b.Locale), Timezone: deref(b.Timezone), Bio: deref(b.Bio)})
	if err != nil {
		return nil, err
	}
	var r gen.ReplaceProfile200JSONResponse
	r.Data.Profile = toProfile(p)
	return r, nil
}

// ListLocations lists the caller's locations.
func (a *API) ListLocations(ctx context.Context, _ gen.ListLocationsRequestObject) (gen.ListLocationsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ls, err := a.users.Locations(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.ListLocations200JSONResponse
	r.Data.Locations = make([]gen.Location, 0, len(ls))
	for i := range ls {
		r.Data.Locations = append(r.Data.Locations, toLocation(&ls[i]))
	}
	return r, nil
}

// CreateLocation adds a location of the caller's.
func (a *API) CreateLocation(ctx context.Context, req gen.CreateLocationRequestObject) (gen.CreateLocationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.users.CreateLocation(ctx, id.User, fromLocationInput(req.Body))
	if err != nil {
		return nil, err
	}
	var r gen.CreateLocation201JSONResponse
	r.Data.Location = toLocation(l)
	return r, nil
}

// UpdateLocation replaces a location of the caller's (another user's answers 404).
func (a *API) UpdateLocation(ctx context.Context, req gen.UpdateLocationRequestObject) (gen.UpdateLocationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.users.UpdateLocation(ctx, id.User, req.Id, fromLocationInput(req.Body))
	if err != nil {
		return nil, err
	}
	var r gen.UpdateLocation200JSONResponse
	r.Data.Location = toLocation(l)
	return r, nil
}

// DeleteLocation removes a location of the caller's (another user's answers 404).
func (a *API) DeleteLocation(ctx context.Context, req gen.DeleteLocationRequestObject) (gen.DeleteLocationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.users.DeleteLocation(ctx, id.User, req.Id); err != nil {
		return nil, err
	}
	return gen.DeleteLocation200JSONResponse(deleted()), nil
}
